#include "kernels/profiler/collective_kind.h"

#include "common/errors.h"

namespace strata::kernels::profiler {

const char* to_string(CollectiveKind c) {
  switch (c) {
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
    case CollectiveKind::AllToAll: return "all_to_all";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::SendRecv: return "send_recv";
  }
  return "?";
}

CollectiveKind collective_kind_from_string(const std::string& s) {
  for (CollectiveKind c : all_collective_kinds())
    if (s == to_string(c)) return c;
  input_error("unknown collective '{}' (expected all_reduce, all_gather, reduce_scatter, "
              "all_to_all, broadcast or send_recv)", s);
}

double bus_factor(CollectiveKind c, int ranks) {
  const double n = ranks;
  switch (c) {
    case CollectiveKind::AllReduce: return ranks > 0 ? 2.0 * (n - 1) / n : 0.0;
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllToAll: return ranks > 0 ? (n - 1) / n : 0.0;
    case CollectiveKind::Broadcast:
    case CollectiveKind::SendRecv: return 1.0;
  }
  return 1.0;
}

std::vector<CollectiveKind> all_collective_kinds() {
  return {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
          CollectiveKind::AllToAll,  CollectiveKind::Broadcast, CollectiveKind::SendRecv};
}

}  // namespace strata::kernels::profiler
