#include "runtime/cuda/strided_batched_gemm.h"

#include <cublasLt.h>

#include <fmt/format.h>

#include "common/errors.h"
#include "kernels/cuda/cublaslt_plan.h"
#include "kernels/cuda/device_check.h"

namespace strata::runtime::gpu {

// cuBLASLt's A is our B and its B our A (row-major operands as column-major ones).
struct StridedBatchedGemm::Plan : kernels::CublasLtPlan {};

namespace {

cublasLtHandle_t lt(void* h) { return static_cast<cublasLtHandle_t>(h); }

// A column-major (rows, cols) layout with leading dimension ld, repeated `batch` times
// `stride` elements apart.
void make_layout(cublasLtMatrixLayout_t* layout, cudaDataType_t t, std::int64_t rows, std::int64_t cols,
                 std::int64_t ld, std::int64_t batch, std::int64_t stride) {
  STRATA_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(layout, t, static_cast<std::uint64_t>(rows),
                                                 static_cast<std::uint64_t>(cols), ld));
  const auto count = static_cast<std::int32_t>(batch);
  STRATA_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                       sizeof(count)));
  const std::int64_t offset = stride;
  STRATA_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                       &offset, sizeof(offset)));
}

}  // namespace

StridedBatchedGemm::StridedBatchedGemm(std::size_t workspace_bytes) : workspace_bytes_(workspace_bytes) {
  kernels::open_cublaslt(handle_, workspace_, workspace_bytes_);
}

StridedBatchedGemm::~StridedBatchedGemm() {
  plans_.clear();
  kernels::close_cublaslt(handle_, workspace_);
}

StridedBatchedGemm::Plan& StridedBatchedGemm::plan(kernels::GemmDType dtype, bool trans_a, bool trans_b,
                                                   std::int64_t m, std::int64_t n, std::int64_t k,
                                                   std::int64_t batch, std::int64_t stride_a,
                                                   std::int64_t stride_b, std::int64_t stride_c) {
  const Key key{static_cast<std::int64_t>(dtype), trans_a, trans_b, m, n, k, batch, stride_a, stride_b, stride_c};
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  auto p = std::make_unique<Plan>();
  const cudaDataType_t t = kernels::cublaslt_storage_type(dtype);
  // Row-major C (m,n) = op(A) op(B) is the column-major C^T (n,m) = op(B)^T op(A)^T: the
  // row-major buffers are passed unchanged, our B as cuBLASLt's A and our A as its B.
  p->describe(dtype, trans_a, trans_b);
  // Stored column-major shapes: B row-major (k,n) is col-major (n,k) with ld n; B row-major
  // (n,k) [trans_b] is col-major (k,n) with ld k. Likewise A (m,k) -> (k,m) ld k, or
  // A (k,m) [trans_a] -> (m,k) ld m. C (m,n) -> (n,m) ld n.
  if (!trans_b) make_layout(&p->a, t, n, k, n, batch, stride_b);
  else make_layout(&p->a, t, k, n, k, batch, stride_b);
  if (!trans_a) make_layout(&p->b, t, k, m, k, batch, stride_a);
  else make_layout(&p->b, t, m, k, m, batch, stride_a);
  make_layout(&p->c, t, n, m, n, batch, stride_c);

  if (!p->choose_algo(lt(handle_), workspace_bytes_))
    throw DeviceError(fmt::format("cuBLASLt has no algorithm for a batched {} GEMM ({}, {}, {}) x {}",
                                  kernels::to_string(dtype), m, n, k, batch));
  Plan& ref = *p;
  plans_.emplace(key, std::move(p));
  return ref;
}

void StridedBatchedGemm::matmul(kernels::GemmDType dtype, bool trans_a, bool trans_b, std::int64_t m,
                                std::int64_t n, std::int64_t k, std::int64_t batch, float alpha,
                                const void* a, std::int64_t stride_a, const void* b, std::int64_t stride_b,
                                float beta, void* c, std::int64_t stride_c, cudaStream_t stream) {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0)
    throw InternalError(fmt::format("batched gemm ({}, {}, {}) x {}: sizes must be > 0", m, n, k, batch));
  Plan& p = plan(dtype, trans_a, trans_b, m, n, k, batch, stride_a, stride_b, stride_c);
  STRATA_CUBLAS_CHECK(cublasLtMatmul(lt(handle_), p.desc, &alpha, b, p.a, a, p.b, &beta, c, p.c, c, p.c,
                                     &p.algo, workspace_, workspace_bytes_, stream));
}

}  // namespace strata::runtime::gpu
