// Collectives and their bus-bandwidth factors (nccl-tests doc/PERFORMANCE.md),
// defined once: the profiler turns measured time into busbw with bus_factor, the
// cost model turns busbw back into time with the same function.
#pragma once
#include <string>

namespace strata::costmodel {

enum class Collective { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll, SendRecv };

// busbw = algbw * bus_factor; algbw = bytes / time.
// AllReduce 2(n-1)/n; AllGather, ReduceScatter, AllToAll (n-1)/n; others 1.
double bus_factor(Collective c, int n);
const char* to_string(Collective c);                 // "all_reduce", ...
Collective collective_from_string(const std::string& s);  // InputError on unknown

}  // namespace strata::costmodel
