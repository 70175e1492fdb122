#include "costmodel/collective.h"

#include "common/enum_names.h"
#include "common/errors.h"

namespace strata::costmodel {

double bus_factor(Collective c, int n) {
  if (n < 1) input_error("collective group size ({}) must be >= 1", n);
  const double nd = n;
  switch (c) {
    case Collective::AllReduce: return 2.0 * (nd - 1.0) / nd;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll: return (nd - 1.0) / nd;
    case Collective::Broadcast:
    case Collective::Reduce:
    case Collective::SendRecv: return 1.0;
  }
  return 1.0;
}

constexpr EnumName<Collective> kCollectiveNames[] = {
    {Collective::AllReduce, "all_reduce"}, {Collective::AllGather, "all_gather"},
    {Collective::ReduceScatter, "reduce_scatter"}, {Collective::Broadcast, "broadcast"},
    {Collective::Reduce, "reduce"}, {Collective::AllToAll, "all_to_all"}, {Collective::SendRecv, "send_recv"}};

const char* to_string(Collective c) { return enum_name(c, kCollectiveNames); }

Collective collective_from_string(const std::string& s) {
  if (const auto c = enum_from_name(s, kCollectiveNames)) return *c;
  input_error("unknown collective '{}' (expected one of: {})", s, enum_names(kCollectiveNames));
}

}  // namespace strata::costmodel
