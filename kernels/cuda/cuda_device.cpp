#include "kernels/cuda/cuda_device.h"

#include <cuda_runtime_api.h>
#include <cublasLt.h>
#include <nccl.h>

#include <fmt/format.h>

#include "kernels/cuda/device_check.h"

namespace strata::kernels {

int cuda_device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state
    return 0;
  }
  return n;
}

std::string cuda_unavailable_reason() {
  int n = 0;
  cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    cudaGetLastError();
    return fmt::format("no CUDA device visible ({})", cudaGetErrorString(rc));
  }
  return n == 0 ? std::string("no CUDA device visible") : std::string();
}

CudaDeviceInfo cuda_device_info(int device) {
  cudaDeviceProp prop{};
  STRATA_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  CudaDeviceInfo info;
  info.index = device;
  info.name = prop.name;
  info.memory_gib = static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
  info.sm_count = prop.multiProcessorCount;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  int clock_khz = 0, mem_clock_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device) == cudaSuccess)
    info.clock_ghz = clock_khz / 1e6;
  if (cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess)
    info.memory_bandwidth_gbps = 2.0 * mem_clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
  cudaGetLastError();
  return info;
}

void cuda_set_device(int device) { STRATA_CUDA_CHECK(cudaSetDevice(device)); }

std::string cuda_library_versions() {
  int runtime = 0, driver = 0, nccl = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  ncclGetVersion(&nccl);
  return fmt::format("CUDA runtime {}.{}, driver {}.{}, cuBLASLt {}, NCCL {}.{}.{}", runtime / 1000,
                     (runtime % 1000) / 10, driver / 1000, (driver % 1000) / 10, cublasLtGetVersion(),
                     nccl / 10000, (nccl % 10000) / 100, nccl % 100);
}

}  // namespace strata::kernels
