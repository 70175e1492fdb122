// host_memory(): the CPU backend's MemorySpace.
#include <cstdlib>
#include <cstring>
#include <new>

#include "kernels/memory_space.h"

namespace strata::kernels {

namespace {
class HostMemory final : public MemorySpace {
 public:
  const char* name() const override { return "host"; }
  void* allocate(std::size_t bytes) override {
    std::size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void release(void* p) override { std::free(p); }
  void upload(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void download(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void zero(void* p, std::size_t bytes) override { std::memset(p, 0, bytes); }
  void synchronize() override {}
};
}  // namespace

std::unique_ptr<MemorySpace> host_memory() { return std::make_unique<HostMemory>(); }

}  // namespace strata::kernels
