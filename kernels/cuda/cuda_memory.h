// cuda_memory(): the cuda backend's MemorySpace (cudaMalloc'd device memory on the
// current device; copies are synchronous).
#pragma once
#include <memory>

#include "kernels/memory_space.h"

namespace strata::kernels {

std::unique_ptr<MemorySpace> cuda_memory(int device);

}  // namespace strata::kernels
