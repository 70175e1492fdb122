// CublasLtGemm: row-major GEMM on device memory through cuBLASLt, with tensor cores:
// bf16 and fp16 operands (fp32 accumulate and scale), tf32 (fp32 storage,
// CUBLAS_COMPUTE_32F_FAST_TF32) and fp32. One handle, one workspace, and a cache of
// descriptors + heuristic algorithm per (dtype, transposes, m, n, k).
//
// Row-major C(m,n) = op(A)(m,k) op(B)(k,n) is computed as the column-major product
// C^T(n,m) = op(B)^T op(A)^T, so the row-major buffers are passed as they are.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "kernels/gemm_dtype.h"

namespace strata::kernels {

class CublasLtGemm {
 public:
  explicit CublasLtGemm(std::size_t workspace_bytes = std::size_t{32} << 20);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // C = alpha * op(A) op(B) + beta * C. A, B, C hold 2-byte elements for bf16/fp16 and
  // floats for tf32/fp32. Asynchronous on `stream`.
  void matmul(GemmDType dtype, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
              std::int64_t k, float alpha, const void* a, const void* b, float beta, void* c,
              cudaStream_t stream = nullptr);
  // `runs` >= 1 calls back to back timed with CUDA events on `stream`: mean
  // microseconds per call (synchronizes).
  double timed_matmul_us(GemmDType dtype, std::int64_t m, std::int64_t n, std::int64_t k,
                         const void* a, const void* b, void* c, int runs = 1, cudaStream_t stream = nullptr);

 private:
  struct Plan;
  using Key = std::tuple<int, bool, bool, std::int64_t, std::int64_t, std::int64_t>;
  Plan& plan(GemmDType dtype, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k);
  void* handle_ = nullptr;  // cublasLtHandle_t
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace strata::kernels
