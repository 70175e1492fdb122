#include "kernels/cuda/cublaslt_gemm.h"

#include <algorithm>

#include <cublasLt.h>

#include <fmt/format.h>

#include "common/errors.h"
#include "kernels/cuda/cublaslt_plan.h"
#include "kernels/cuda/device_check.h"

namespace strata::kernels {

// The plan is the shared descriptor set (cublaslt_plan.h).
struct CublasLtGemm::Plan : CublasLtPlan {};

namespace {

cublasLtHandle_t lt(void* h) { return static_cast<cublasLtHandle_t>(h); }

}  // namespace

CublasLtGemm::CublasLtGemm(std::size_t workspace_bytes) : workspace_bytes_(workspace_bytes) {
  open_cublaslt(handle_, workspace_, workspace_bytes_);
  STRATA_CUDA_CHECK(cudaEventCreate(&start_));
  STRATA_CUDA_CHECK(cudaEventCreate(&stop_));
}

CublasLtGemm::~CublasLtGemm() {
  plans_.clear();
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
  close_cublaslt(handle_, workspace_);
}

CublasLtGemm::Plan& CublasLtGemm::plan(GemmDType dtype, bool trans_a, bool trans_b, std::int64_t m,
                                       std::int64_t n, std::int64_t k) {
  Key key{static_cast<int>(dtype), trans_a, trans_b, m, n, k};
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  auto p = std::make_unique<Plan>();
  const cudaDataType_t t = cublaslt_storage_type(dtype);
  // Column-major view: C^T(n,m) = op(B)^T(n,k) * op(A)^T(k,m). cuBLASLt's "A" is our B.
  p->describe(dtype, trans_a, trans_b);
  const auto um = static_cast<std::uint64_t>(m), un = static_cast<std::uint64_t>(n),
             uk = static_cast<std::uint64_t>(k);
  // Stored (column-major) shapes before the op: B row-major (k,n) is col-major (n,k), ld n;
  // B row-major (n,k) [trans_b] is col-major (k,n), ld k.
  if (!trans_b) STRATA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->a, t, un, uk, n));
  else STRATA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->a, t, uk, un, k));
  if (!trans_a) STRATA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->b, t, uk, um, k));
  else STRATA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->b, t, um, uk, m));
  STRATA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->c, t, un, um, n));

  if (!p->choose_algo(lt(handle_), workspace_bytes_))
    throw DeviceError(fmt::format("cuBLASLt has no algorithm for {} GEMM ({}, {}, {})", to_string(dtype), m,
                                  n, k));
  auto& ref = *p;
  plans_.emplace(key, std::move(p));
  return ref;
}

void CublasLtGemm::matmul(GemmDType dtype, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
                          std::int64_t k, float alpha, const void* a, const void* b, float beta, void* c,
                          cudaStream_t stream) {
  if (m <= 0 || n <= 0 || k <= 0) throw InternalError(fmt::format("gemm ({}, {}, {}): sizes must be > 0", m, n, k));
  Plan& p = plan(dtype, trans_a, trans_b, m, n, k);
  STRATA_CUBLAS_CHECK(cublasLtMatmul(lt(handle_), p.desc, &alpha, b, p.a, a, p.b, &beta, c, p.c, c, p.c,
                                     &p.algo, workspace_, workspace_bytes_, stream));
}

double CublasLtGemm::timed_matmul_us(GemmDType dtype, std::int64_t m, std::int64_t n, std::int64_t k,
                                     const void* a, const void* b, void* c, int runs, cudaStream_t stream) {
  plan(dtype, false, false, m, n, k);  // heuristic query outside the timed region
  runs = std::max(1, runs);
  STRATA_CUDA_CHECK(cudaEventRecord(start_, stream));
  for (int r = 0; r < runs; ++r) matmul(dtype, false, false, m, n, k, 1.0f, a, b, 0.0f, c, stream);
  STRATA_CUDA_CHECK(cudaEventRecord(stop_, stream));
  STRATA_CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  STRATA_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return static_cast<double>(ms) * 1000.0 / runs;
}

}  // namespace strata::kernels
