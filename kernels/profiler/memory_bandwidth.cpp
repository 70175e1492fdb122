#include "kernels/profiler/memory_bandwidth.h"

#include <chrono>
#include <vector>

#include "kernels/backend.h"
#include "kernels/buffer.h"
#include "kernels/memory_space.h"
#include "kernels/profiler/group_reduce.h"

namespace strata::kernels::profiler {

BandwidthRecord measure_copy_bandwidth(MemorySpace& memory, std::int64_t bytes,
                                       const TimingOptions& timing, Communicator* sync) {
  BandwidthRecord rec;
  rec.bytes = bytes;
  const auto n = static_cast<std::size_t>(bytes);
  Buffer src(memory, n), dst(memory, n);
  memory.zero(src.get(), n);  // touch the pages before timing
  memory.zero(dst.get(), n);
  auto timed_copy = [&] {
    if (sync && sync->size() > 1) sync->barrier();
    auto t0 = std::chrono::steady_clock::now();
    memory.copy(dst.get(), src.get(), n);
    memory.synchronize();
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    return max_over_ranks(sync, us);
  };
  double last_us = 0;
  for (int w = 0; w < std::max(1, timing.warmup); ++w) last_us = timed_copy();
  const int reps = choose_reps(timing, last_us * 1e-6);
  std::vector<double> samples;
  for (int i = 0; i < reps; ++i) samples.push_back(timed_copy());
  rec.time = summarize_us(samples);
  if (rec.time.median_us > 0) rec.gbps = 2.0 * static_cast<double>(bytes) / (rec.time.median_us * 1e-6) / 1e9;
  return rec;
}

}  // namespace strata::kernels::profiler
