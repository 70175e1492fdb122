// Helpers shared by the models tests (one definition: the sanitizer preset builds each
// test target as one unity translation unit).
#pragma once
#include <algorithm>
#include <cmath>
#include <string>

#include "common/errors.h"

namespace strata::models::testing {

// The InputError message `fn` throws, or "<no InputError>".
inline std::string message_of(auto&& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no InputError>";
}

inline double rel(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-300); }

}  // namespace strata::models::testing

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)
