// CollectiveKind: the collectives the profiler measures, with their nccl-tests
// bus-bandwidth factors (doc/PERFORMANCE.md):
//   all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n;
//   broadcast 1; send_recv 1.
// The cost model defines the same table in costmodel/collective.h (bus_factor), which
// turns busbw back into time; kernels may not include costmodel (layering), so the
// profiler keeps this copy and tests/kernels checks that the two agree for every
// collective and group size.
#pragma once
#include <string>
#include <vector>

namespace strata::kernels::profiler {

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, SendRecv };

const char* to_string(CollectiveKind c);  // "all_reduce", ... (the profile format's names)
CollectiveKind collective_kind_from_string(const std::string& s);  // InputError on unknown
double bus_factor(CollectiveKind c, int ranks);
std::vector<CollectiveKind> all_collective_kinds();

}  // namespace strata::kernels::profiler
