// Buffer: an RAII allocation in a MemorySpace (host or device memory).
#pragma once
#include <cstddef>

#include "kernels/memory_space.h"

namespace strata::kernels {

class Buffer {
 public:
  Buffer(MemorySpace& space, std::size_t bytes)
      : space_(&space), bytes_(bytes), ptr_(bytes ? space.allocate(bytes) : nullptr) {}
  ~Buffer() {
    if (ptr_) space_->release(ptr_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* get() const { return ptr_; }
  float* floats() const { return static_cast<float*>(ptr_); }
  std::size_t bytes() const { return bytes_; }

 private:
  MemorySpace* space_;
  std::size_t bytes_;
  void* ptr_;
};

}  // namespace strata::kernels
