// MemorySpace: where a backend's buffers live (host memory for cpu, device memory
// for cuda), so the profiler's sweeps can allocate, fill and check buffers without
// knowing the backend. Pointers from allocate() are what the backend's Communicator
// and GEMM take.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

namespace strata::kernels {

class MemorySpace {
 public:
  virtual ~MemorySpace() = default;
  virtual const char* name() const = 0;                         // "host", "cuda:0"
  virtual void* allocate(std::size_t bytes) = 0;                // throws DeviceError / bad_alloc
  virtual void release(void* p) = 0;
  virtual void upload(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void download(void* host_dst, const void* src, std::size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;  // inside the space
  virtual void zero(void* p, std::size_t bytes) = 0;
  virtual void synchronize() = 0;  // waits for outstanding work (no-op on host)
};

// Host memory (64-byte aligned).
std::unique_ptr<MemorySpace> host_memory();

}  // namespace strata::kernels
