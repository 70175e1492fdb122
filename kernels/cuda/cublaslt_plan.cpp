#include "kernels/cuda/cublaslt_plan.h"

namespace strata::kernels {

CublasLtPlan::~CublasLtPlan() {
  if (desc) cublasLtMatmulDescDestroy(desc);
  if (a) cublasLtMatrixLayoutDestroy(a);
  if (b) cublasLtMatrixLayoutDestroy(b);
  if (c) cublasLtMatrixLayoutDestroy(c);
}

cudaDataType_t cublaslt_storage_type(GemmDType d) {
  switch (d) {
    case GemmDType::Bf16: return CUDA_R_16BF;
    case GemmDType::Fp16: return CUDA_R_16F;
    case GemmDType::Tf32:
    case GemmDType::Fp32: return CUDA_R_32F;
  }
  return CUDA_R_32F;
}

cublasComputeType_t cublaslt_compute_type(GemmDType d) {
  return d == GemmDType::Tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

}  // namespace strata::kernels
