// Check macros for the CUDA runtime, cuBLAS(Lt) and NCCL: a failed call throws
// strata::DeviceError naming file:line, the call and the library's error string
// (only cli/main.cpp prints it, as one `error:` line on stderr).
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

namespace strata::kernels::detail {
// Name of a cuBLAS status (cublasGetStatusString lives in libcublas, which cuBLASLt
// users need not link).
const char* cublas_status_name(cublasStatus_t s);
[[noreturn]] void throw_device_error(const char* library, const char* what, const char* call,
                                     const char* file, int line);
}  // namespace strata::kernels::detail

#define STRATA_CUDA_CHECK(call)                                                                 \
  do {                                                                                          \
    cudaError_t strata_cuda_rc_ = (call);                                                       \
    if (strata_cuda_rc_ != cudaSuccess)                                                         \
      ::strata::kernels::detail::throw_device_error("CUDA", cudaGetErrorString(strata_cuda_rc_), \
                                                    #call, __FILE__, __LINE__);                 \
  } while (0)

#define STRATA_CUBLAS_CHECK(call)                                                                   \
  do {                                                                                              \
    cublasStatus_t strata_cublas_rc_ = (call);                                                      \
    if (strata_cublas_rc_ != CUBLAS_STATUS_SUCCESS)                                                 \
      ::strata::kernels::detail::throw_device_error("cuBLAS", ::strata::kernels::detail::cublas_status_name(strata_cublas_rc_), \
                                                    #call, __FILE__, __LINE__);                     \
  } while (0)

#define STRATA_NCCL_CHECK(call)                                                                 \
  do {                                                                                          \
    ncclResult_t strata_nccl_rc_ = (call);                                                      \
    if (strata_nccl_rc_ != ncclSuccess)                                                         \
      ::strata::kernels::detail::throw_device_error("NCCL", ncclGetErrorString(strata_nccl_rc_), \
                                                    #call, __FILE__, __LINE__);                 \
  } while (0)
