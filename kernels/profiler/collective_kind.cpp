#include "kernels/profiler/collective_kind.h"

#include "common/enum_names.h"
#include "common/errors.h"

namespace strata::kernels::profiler {

constexpr EnumName<CollectiveKind> kCollectiveKindNames[] = {
    {CollectiveKind::AllReduce, "all_reduce"}, {CollectiveKind::AllGather, "all_gather"},
    {CollectiveKind::ReduceScatter, "reduce_scatter"}, {CollectiveKind::AllToAll, "all_to_all"},
    {CollectiveKind::Broadcast, "broadcast"}, {CollectiveKind::SendRecv, "send_recv"}};

const char* to_string(CollectiveKind c) { return enum_name(c, kCollectiveKindNames); }

CollectiveKind collective_kind_from_string(const std::string& s) {
  if (const auto c = enum_from_name(s, kCollectiveKindNames)) return *c;
  input_error("unknown collective '{}' (expected {})", s, enum_names(kCollectiveKindNames, " or "));
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
  std::vector<CollectiveKind> all;
  for (const auto& e : kCollectiveKindNames) all.push_back(e.value);
  return all;
}

}  // namespace strata::kernels::profiler
