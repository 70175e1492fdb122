// StridedBatchedGemm: `batch` independent row-major GEMMs
//   C_i (m, n) = alpha * op(A_i) op(B_i) + beta * C_i,   X_i = X + i * stride_x elements,
// in one cuBLASLt call (CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT / STRIDED_BATCH_OFFSET). The
// GPT trainer's attention runs its per-(batch, head) products (q k^T, p v and their
// gradients) with it. Same dtypes and the same row-major -> column-major mapping as
// kernels::CublasLtGemm (which has no batched entry point): bf16/fp16 operands and
// output with fp32 accumulate, tf32, fp32. Its own handle and workspace; descriptors and
// the heuristic algorithm are cached per (dtype, transposes, m, n, k, batch, strides).
// Operands must start at 256-byte boundaries (the heuristic's default assumption), and
// the strides should keep every batch entry 16-byte aligned.
#pragma once
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>

#include "kernels/gemm_dtype.h"

namespace strata::runtime::gpu {

class StridedBatchedGemm {
 public:
  explicit StridedBatchedGemm(std::size_t workspace_bytes = std::size_t{32} << 20);
  ~StridedBatchedGemm();
  StridedBatchedGemm(const StridedBatchedGemm&) = delete;
  StridedBatchedGemm& operator=(const StridedBatchedGemm&) = delete;

  // Asynchronous on `stream`. Sizes and batch must be > 0 (InternalError otherwise).
  void matmul(kernels::GemmDType dtype, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
              std::int64_t k, std::int64_t batch, float alpha, const void* a, std::int64_t stride_a,
              const void* b, std::int64_t stride_b, float beta, void* c, std::int64_t stride_c,
              cudaStream_t stream);

 private:
  struct Plan;
  using Key = std::array<std::int64_t, 10>;
  Plan& plan(kernels::GemmDType dtype, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
             std::int64_t k, std::int64_t batch, std::int64_t stride_a, std::int64_t stride_b,
             std::int64_t stride_c);
  void* handle_ = nullptr;  // cublasLtHandle_t
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace strata::runtime::gpu
