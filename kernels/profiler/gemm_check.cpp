#include "kernels/profiler/gemm_check.h"

#include <algorithm>
#include <cmath>

namespace strata::kernels::profiler {

namespace {

std::vector<std::int64_t> spread(std::int64_t n, std::int64_t want) {
  std::vector<std::int64_t> idx;
  if (n <= want) {
    for (std::int64_t i = 0; i < n; ++i) idx.push_back(i);
    return idx;
  }
  for (std::int64_t j = 0; j < want; ++j) idx.push_back(j * (n - 1) / (want - 1));
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  return idx;
}

}  // namespace

void fill_check_pattern(float* dst, std::size_t count, std::uint64_t seed) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  for (std::size_t i = 0; i < count; ++i) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    std::uint64_t r = (x * 0x2545F4914F6CDD1Dull) >> 59;  // 0..31
    dst[i] = static_cast<float>(static_cast<int>(r % 17) - 8) / 8.0f;
  }
}

double gemm_tolerance(GemmDType dtype) {
  switch (dtype) {
    case GemmDType::Bf16: return std::ldexp(1.0, -7);   // output rounding 2^-8, x2 slack
    case GemmDType::Fp16: return std::ldexp(1.0, -10);  // 2^-11 x2
    case GemmDType::Tf32:
    case GemmDType::Fp32: return 1e-5;                  // exact sums; slack only
  }
  return 1e-5;
}

GemmCheck check_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                     const float* b, const float* c, GemmDType dtype) {
  GemmCheck out;
  const bool full = static_cast<double>(m) * n * k <= 16777216.0;
  std::vector<std::int64_t> rows = full ? spread(m, m) : spread(m, 16);
  std::vector<std::int64_t> cols = full ? spread(n, n) : spread(n, 64);
  const double tol = gemm_tolerance(dtype);
  for (std::int64_t i : rows) {
    for (std::int64_t j : cols) {
      double ref = 0, mag = 0;
      for (std::int64_t l = 0; l < k; ++l) {
        double p = static_cast<double>(a[i * k + l]) * static_cast<double>(b[l * n + j]);
        ref += p;
        mag += std::fabs(p);
      }
      double got = c[i * n + j];
      double err = std::fabs(got - ref) / std::max(mag, 1e-30);
      if (!std::isfinite(got)) err = INFINITY;
      ++out.checked;
      if (!std::isfinite(got) || (err > tol && std::fabs(got - ref) > 1e-30)) ++out.wrong;
      if (std::isfinite(err)) out.max_error = std::max(out.max_error, err);
      else out.max_error = INFINITY;
    }
  }
  return out;
}

}  // namespace strata::kernels::profiler
