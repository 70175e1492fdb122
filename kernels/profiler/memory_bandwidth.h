// Achieved memory bandwidth of one rank while every rank of the group copies at the
// same time (a STREAM-style copy: each copied byte is read once and written once, so
// bandwidth = 2 * bytes / time). The cost model times elementwise ops with it.
#pragma once
#include <cstdint>

#include "kernels/profiler/timing.h"

namespace strata::kernels {
class Communicator;
class MemorySpace;
}  // namespace strata::kernels

namespace strata::kernels::profiler {

struct BandwidthRecord {
  std::int64_t bytes = 0;   // size of the copied buffer
  TimingStats time;         // slowest rank, per copy
  double gbps = 0;          // 2 * bytes / median time, GB/s (1e9 B/s)
};

BandwidthRecord measure_copy_bandwidth(MemorySpace& memory, std::int64_t bytes,
                                       const TimingOptions& timing, Communicator* sync);

}  // namespace strata::kernels::profiler
