// gemm_f32 (OpenBLAS cblas_sgemm, row-major) against a naive triple loop in double,
// on random shapes including odd sizes, every transpose combination, alpha and beta.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/blas_library.h"

namespace strata::kernels {
namespace {

// Element (i, j) of op(X) where X is stored row-major with `cols` columns.
float at(const std::vector<float>& x, bool trans, std::size_t cols, std::size_t i, std::size_t j) {
  return trans ? x[j * cols + i] : x[i * cols + j];
}

void check_shape(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, float alpha, float beta,
                 std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(m * k), b(k * n), c(m * n);
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  for (auto& x : c) x = u(rng);
  std::vector<float> c0 = c;
  gemm_f32(ta, tb, m, n, k, alpha, a.data(), b.data(), beta, c.data());
  const std::size_t a_cols = ta ? m : k, b_cols = tb ? k : n;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (std::size_t l = 0; l < k; ++l) {
        double p = double(at(a, ta, a_cols, i, l)) * double(at(b, tb, b_cols, l, j));
        ref += p;
        mag += std::fabs(p);
      }
      double expect = alpha * ref + beta * double(c0[i * n + j]);
      double tol = 1e-5 * (std::fabs(alpha) * mag + std::fabs(beta * c0[i * n + j])) + 1e-6;
      ASSERT_NEAR(c[i * n + j], expect, tol) << "ta=" << ta << " tb=" << tb << " m=" << m << " n=" << n
                                             << " k=" << k << " at (" << i << "," << j << ")";
    }
}

TEST(GemmF32, MatchesNaiveReferenceOnRandomShapesAndTransposes) {
  std::mt19937 rng(42);
  std::uniform_int_distribution<std::size_t> dim(1, 97);
  for (int trial = 0; trial < 24; ++trial) {
    std::size_t m = dim(rng), n = dim(rng), k = dim(rng);
    for (int t = 0; t < 4; ++t) check_shape(t & 1, t & 2, m, n, k, 1.0f, 0.0f, rng);
  }
}

TEST(GemmF32, OddSizesAndDegenerateOnes) {
  std::mt19937 rng(7);
  for (auto [m, n, k] : std::vector<std::tuple<std::size_t, std::size_t, std::size_t>>{
           {1, 1, 1}, {1, 257, 3}, {255, 1, 129}, {3, 5, 1031}, {65, 33, 17}, {127, 129, 131}})
    for (int t = 0; t < 4; ++t) check_shape(t & 1, t & 2, m, n, k, 1.0f, 0.0f, rng);
}

TEST(GemmF32, AppliesAlphaAndBeta) {
  std::mt19937 rng(3);
  check_shape(false, false, 17, 19, 23, 0.5f, 2.0f, rng);
  check_shape(true, true, 31, 7, 11, -1.5f, 1.0f, rng);
}

TEST(GemmF32, ZeroInnerDimensionScalesC) {
  std::vector<float> c{1, 2, 3, 4};
  gemm_f32(false, false, 2, 2, 0, 1.0f, nullptr, nullptr, 0.5f, c.data());
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
  gemm_f32(false, false, 2, 2, 0, 1.0f, nullptr, nullptr, 0.0f, c.data());
  EXPECT_EQ(c, (std::vector<float>{0, 0, 0, 0}));
}

TEST(BlasLibrary, ReportsVersionAndThreads) {
  EXPECT_FALSE(blas_version().empty());
  EXPECT_GE(blas_threads(), 1);
}

}  // namespace
}  // namespace strata::kernels
