// gemm_f32 for the CPU backend: one cblas_sgemm call, row-major.
#include <cblas.h>

#include <climits>

#include "common/errors.h"
#include "kernels/backend.h"

namespace strata::kernels {

void gemm_f32(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
              const float* a, const float* b, float beta, float* c) {
  STRATA_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, "gemm ({}, {}, {}) exceeds BLAS int",
               m, n, k);
  if (m == 0 || n == 0) return;
  if (k == 0) {  // C = beta * C; BLAS implementations disagree on k = 0
    for (std::size_t i = 0; i < m * n; ++i) c[i] = beta == 0.0f ? 0.0f : beta * c[i];
    return;
  }
  // Row-major storage: op(A) is (m,k); A itself is (m,k) with lda = k, or (k,m) with lda = m.
  const int lda = static_cast<int>(trans_a ? m : k);
  const int ldb = static_cast<int>(trans_b ? k : n);
  const int ldc = static_cast<int>(n);
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a, lda, b, ldb,
              beta, c, ldc);
}

}  // namespace strata::kernels
