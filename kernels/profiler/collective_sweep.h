// Collective sweep: bus bandwidth vs message size for each collective on one group of
// ranks, printed and recorded the nccl-tests way (size, count, type, time, algbw,
// busbw, #wrong).
//
// Sizes follow nccl-tests: `bytes` is the all-reduce/broadcast buffer, the gathered
// (output) buffer of all_gather, the input of reduce_scatter, the send buffer of
// all_to_all, and the message of send_recv (every rank sends to rank+1 and receives
// from rank-1). algbw = bytes / time, busbw = algbw * bus_factor(collective, ranks).
//
// Each row is validated before it is timed: the first warm-up run uses inputs whose
// result is known in closed form (all-reduce of rank + i%1024 sums to
// n*(i%1024) + n(n-1)/2; gathers and all-to-all move values that encode their source
// rank and index), and every rank counts the elements that differ. A row with wrong
// elements is not timed and is left out of profiles. Groups of one rank move no data:
// their rows are measured but marked trivial.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/profiler/collective_kind.h"
#include "kernels/profiler/gemm_sweep.h"  // ProgressFn
#include "kernels/profiler/timing.h"

namespace strata::kernels {
class Communicator;
class MemorySpace;
}  // namespace strata::kernels

namespace strata::kernels::profiler {

struct CollectiveRecord {
  CollectiveKind collective = CollectiveKind::AllReduce;
  int ranks = 1;               // group size
  int groups = 1;              // groups running the same sweep at the same time
  std::int64_t bytes = 0;      // nccl-tests "size"
  std::int64_t count = 0;      // fp32 elements in `bytes`
  TimingStats time;            // slowest rank of the group, per repetition
  double algbw_gbps = 0;       // GB/s (1e9 B/s)
  double busbw_gbps = 0;
  std::int64_t wrong = 0;      // wrong elements, summed over the group
  bool trivial = false;        // one rank: nothing moved
  std::string error;
  bool ok() const { return error.empty() && wrong == 0 && time.reps > 0; }
};

struct CollectiveSweepOptions {
  std::int64_t min_bytes = 8;
  std::int64_t max_bytes = std::int64_t{1} << 30;
  std::vector<CollectiveKind> collectives = all_collective_kinds();
  TimingOptions timing{5, 5, 100, 0.2};
  int groups = 1;  // recorded in each row
};

// Runs on every rank of `comm`. `memory` is where `comm` expects buffers (host for MPI,
// device for NCCL); `host_sync` is a host-side communicator over the same ranks for
// barriers and timing reductions (the same object as `comm` on the cpu backend).
std::vector<CollectiveRecord> run_collective_sweep(Communicator& comm, MemorySpace& memory,
                                                   Communicator& host_sync,
                                                   const CollectiveSweepOptions& options,
                                                   const ProgressFn& progress = {});

// Powers of two from min_bytes to max_bytes (min rounded up to a power of two >= 4).
std::vector<std::int64_t> sweep_sizes(std::int64_t min_bytes, std::int64_t max_bytes);

}  // namespace strata::kernels::profiler
