// The InputError text a call throws, or "no error" when it throws none: what a test of a
// bad input reads the message from.
#pragma once
#include <string>

#include "common/errors.h"

namespace strata::testing {

template <typename F>
std::string input_error_of(F&& call) {
  try {
    call();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace strata::testing
