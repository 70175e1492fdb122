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

// The smallest multiple of `step` (> 0) that is >= `value` (>= 0): a default global batch
// rounded up to a multiple of micro-batch x dp.
inline std::int64_t checked_round_up(std::int64_t value, std::int64_t step, std::string_view what) {
  return checked_mul(value / step + (value % step != 0 ? 1 : 0), step, what);
}

}  // namespace strata
