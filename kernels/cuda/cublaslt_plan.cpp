#include "kernels/cuda/cublaslt_plan.h"

#include <cstdint>

#include "kernels/cuda/device_check.h"

namespace strata::kernels {

CublasLtPlan::~CublasLtPlan() {
  if (desc) cublasLtMatmulDescDestroy(desc);
  if (a) cublasLtMatrixLayoutDestroy(a);
  if (b) cublasLtMatrixLayoutDestroy(b);
  if (c) cublasLtMatrixLayoutDestroy(c);
}

void CublasLtPlan::describe(GemmDType dtype, bool trans_a, bool trans_b) {
  STRATA_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, cublaslt_compute_type(dtype), CUDA_R_32F));
  const cublasOperation_t op_lt_a = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_lt_b = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  STRATA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_lt_a,
                                                     sizeof(op_lt_a)));
  STRATA_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_lt_b,
                                                     sizeof(op_lt_b)));
}

bool CublasLtPlan::choose_algo(cublasLtHandle_t handle, std::size_t workspace_bytes) {
  cublasLtMatmulPreference_t pref = nullptr;
  STRATA_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const std::uint64_t ws = workspace_bytes;
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                           &ws, sizeof(ws));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(handle, desc, a, b, c, c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  STRATA_CUBLAS_CHECK(st);
  if (found == 0 || result.state != CUBLAS_STATUS_SUCCESS) return false;
  algo = result.algo;
  return true;
}

void open_cublaslt(void*& handle, void*& workspace, std::size_t workspace_bytes) {
  cublasLtHandle_t h = nullptr;
  STRATA_CUBLAS_CHECK(cublasLtCreate(&h));
  handle = h;
  STRATA_CUDA_CHECK(cudaMalloc(&workspace, workspace_bytes));
}

void close_cublaslt(void* handle, void* workspace) {
  if (workspace) cudaFree(workspace);
  if (handle) cublasLtDestroy(static_cast<cublasLtHandle_t>(handle));
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
