// cuBLASLt plumbing shared by the GEMM wrappers (kernels::CublasLtGemm, the runtime's
// strided-batched attention GEMM): one matmul's descriptors, destroyed together, built and
// given an algorithm the same way, and the cuBLASLt types of a GemmDType (fp32 accumulate
// always; tf32 as a compute mode).
#pragma once
#include <cublasLt.h>

#include <cstddef>

#include "kernels/gemm_dtype.h"

namespace strata::kernels {

struct CublasLtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  CublasLtPlan() = default;
  CublasLtPlan(const CublasLtPlan&) = delete;
  CublasLtPlan& operator=(const CublasLtPlan&) = delete;
  ~CublasLtPlan();

  // Creates `desc` for a row-major C = op(A) op(B) computed as the column-major
  // C^T = op(B)^T op(A)^T: cuBLASLt's A is our B (transposed when trans_b), its B our A.
  void describe(GemmDType dtype, bool trans_a, bool trans_b);
  // Sets `algo` to the heuristic's first choice for the descriptors (layouts made) within
  // `workspace_bytes`; false when cuBLASLt has none. A failed call throws DeviceError.
  bool choose_algo(cublasLtHandle_t handle, std::size_t workspace_bytes);
};

// The cuBLASLt handle and device workspace a GEMM wrapper keeps (as void*, so that its
// header needs no cuBLASLt): created together, and released together after its plans.
void open_cublaslt(void*& handle, void*& workspace, std::size_t workspace_bytes);
void close_cublaslt(void* handle, void* workspace);

cudaDataType_t cublaslt_storage_type(GemmDType d);       // bf16, fp16, else fp32
cublasComputeType_t cublaslt_compute_type(GemmDType d);  // 32F, or 32F_FAST_TF32 for tf32

}  // namespace strata::kernels
