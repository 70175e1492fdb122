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

// One check for every library: `call` returns a `Status` that is `ok` or is named by
// `what(status)`; `text` is the call as written (stringized where the call is made).
#define STRATA_DEVICE_CHECK_(Status, ok, library, what, call, text)                               \
  do {                                                                                            \
    Status strata_device_rc_ = (call);                                                            \
    if (strata_device_rc_ != ok)                                                                  \
      ::strata::kernels::detail::throw_device_error(library, what(strata_device_rc_), text, __FILE__, \
                                                    __LINE__);                                    \
  } while (0)

#define STRATA_CUDA_CHECK(call) STRATA_DEVICE_CHECK_(cudaError_t, cudaSuccess, "CUDA", cudaGetErrorString, call, #call)

#define STRATA_CUBLAS_CHECK(call)                                                                   \
  STRATA_DEVICE_CHECK_(cublasStatus_t, CUBLAS_STATUS_SUCCESS, "cuBLAS",                              \
                       ::strata::kernels::detail::cublas_status_name, call, #call)

#define STRATA_NCCL_CHECK(call) STRATA_DEVICE_CHECK_(ncclResult_t, ncclSuccess, "NCCL", ncclGetErrorString, call, #call)
