// cuBLASLt plumbing shared by the GEMM wrappers (kernels::CublasLtGemm, the runtime's
// strided-batched attention GEMM): one matmul's descriptors, destroyed together, and the
// cuBLASLt types of a GemmDType (fp32 accumulate always; tf32 as a compute mode).
#pragma once
#include <cublasLt.h>

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
};

cudaDataType_t cublaslt_storage_type(GemmDType d);       // bf16, fp16, else fp32
cublasComputeType_t cublaslt_compute_type(GemmDType d);  // 32F, or 32F_FAST_TF32 for tf32

}  // namespace strata::kernels
