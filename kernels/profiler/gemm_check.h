// Validation of a GEMM result against a naive double-precision reference
// (validate-then-time, STYLE lesson 7).
//
// Operands are filled with multiples of 1/8 in [-1, 1]: exactly representable in bf16,
// fp16, tf32 and fp32, and every partial sum is a multiple of 1/64 below 2^24/64, so
// fp32 accumulation is exact for k up to ~260k. A correct kernel therefore differs
// from the reference only by the rounding of its output type; the tolerance is that
// rounding plus a small slack, scaled by sum_k |a_ik b_kj|.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/gemm_dtype.h"

namespace strata::kernels::profiler {

struct GemmCheck {
  std::int64_t checked = 0;   // elements compared against the reference
  std::int64_t wrong = 0;     // elements outside the tolerance
  double max_error = 0;       // max |c - ref| / (sum |a||b|), over checked elements
};

// Fills `count` floats with the check pattern (deterministic in `seed`).
void fill_check_pattern(float* dst, std::size_t count, std::uint64_t seed);
// Tolerance relative to sum |a||b| for results stored as `dtype`.
double gemm_tolerance(GemmDType dtype);
// Compares row-major C(m,n) against A(m,k) B(k,n) (row-major, no transposes). Small
// problems (m*n*k <= 2^24) are checked in full; larger ones on up to 16 rows x 64
// columns spread over the matrix, always including the first and last row and column.
GemmCheck check_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                     const float* b, const float* c, GemmDType dtype);

}  // namespace strata::kernels::profiler
