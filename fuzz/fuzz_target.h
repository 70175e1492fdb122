// Shared body of the libFuzzer targets: a parser may accept the input or reject it
// with strata::InputError; anything else (another exception type, a crash, a sanitizer
// report) is a bug the fuzzer reports. Accepted inputs must survive a round trip
// through the writer: parse(write(parse(x))) succeeds and writes the same text.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
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

// The parser's result for the input, or nothing when it rejects it with an InputError.
template <typename Parse>
auto accepted(const std::uint8_t* data, std::size_t size, const char* source, Parse parse)
    -> std::optional<decltype(parse(std::string(), std::string()))> {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    return parse(text, source);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

}  // namespace strata::fuzz

// The whole libFuzzer target of a parser with a writer: check_parser(parse, write).
#define STRATA_FUZZ_ROUND_TRIP(parse, write)                                                  \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {      \
    return strata::fuzz::check_parser(                                                        \
        data, size, [](const std::string& t, const std::string& s) { return parse(t, s); }, \
        [](const auto& parsed) { return write(parsed); });                                    \
  }
