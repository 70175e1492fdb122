// CudaDevice: runtime detection of CUDA devices and what they are. No device (or no
// driver) is a normal answer, not an error: cuda_device_count() returns 0 and
// cuda_unavailable_reason() says why, so tests skip and `strata calibrate --backend
// cuda` reports a clear error.
#pragma once
#include <string>

namespace strata::kernels {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;           // "NVIDIA H200"
  double memory_gib = 0;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  double clock_ghz = 0;       // peak SM clock
  double memory_bandwidth_gbps = 0;  // 2 x memory clock x bus width (theoretical)
};

int cuda_device_count() noexcept;
std::string cuda_unavailable_reason();  // "" when a device is visible
CudaDeviceInfo cuda_device_info(int device);
void cuda_set_device(int device);
// "CUDA runtime 13.0, driver 13.0, cuBLASLt 130000, NCCL 2.28.9"
std::string cuda_library_versions();

}  // namespace strata::kernels
