// Overflow-safe integer arithmetic for sizes a user controls (layers, GPUs, batch).
// Throws InputError naming what overflowed instead of wrapping silently.
#pragma once
#include <cstdint>
#include <string_view>

#include "common/errors.h"

namespace strata {

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    input_error("{} overflows 64-bit integers ({} x {})", what, a, b);
  return r;
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    input_error("{} overflows 64-bit integers ({} + {})", what, a, b);
  return r;
}

}  // namespace strata
