// Shared body of the libFuzzer targets: a parser may accept the input or reject it
// with strata::InputError; anything else (another exception type, a crash, a sanitizer
// report) is a bug the fuzzer reports. Accepted inputs must survive a round trip
// through the writer: parse(write(parse(x))) succeeds and writes the same text.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/errors.h"

namespace strata::fuzz {

template <typename Parse, typename Write>
int check_parser(const std::uint8_t* data, std::size_t size, Parse parse, Write write) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string first;
  try {
    first = write(parse(text, "fuzz-input"));
  } catch (const InputError&) {
    return 0;  // rejected with an error message: fine
  }
  // Our own output must load again and be a fixed point of parse + write.
  std::string second = write(parse(first, "fuzz-roundtrip"));
  if (second != first) __builtin_trap();
  return 0;
}

}  // namespace strata::fuzz
