#include "kernels/cuda/cuda_memory.h"

#include <string>

#include "kernels/cuda/device_check.h"

namespace strata::kernels {

namespace {
class CudaMemory final : public MemorySpace {
 public:
  explicit CudaMemory(int device) : device_(device), name_("cuda:" + std::to_string(device)) {}
  const char* name() const override { return name_.c_str(); }
  void* allocate(std::size_t bytes) override {
    STRATA_CUDA_CHECK(cudaSetDevice(device_));
    void* p = nullptr;
    STRATA_CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
  }
  void release(void* p) override { cudaFree(p); }
  void upload(void* dst, const void* src, std::size_t bytes) override {
    STRATA_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    STRATA_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
  }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    STRATA_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
  }
  void zero(void* p, std::size_t bytes) override { STRATA_CUDA_CHECK(cudaMemset(p, 0, bytes)); }
  void synchronize() override { STRATA_CUDA_CHECK(cudaDeviceSynchronize()); }

 private:
  int device_;
  std::string name_;
};
}  // namespace

std::unique_ptr<MemorySpace> cuda_memory(int device) { return std::make_unique<CudaMemory>(device); }

}  // namespace strata::kernels
