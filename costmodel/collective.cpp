#include "costmodel/collective.h"

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

const char* to_string(Collective c) {
  switch (c) {
    case Collective::AllReduce: return "all_reduce";
    case Collective::AllGather: return "all_gather";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::Broadcast: return "broadcast";
    case Collective::Reduce: return "reduce";
    case Collective::AllToAll: return "all_to_all";
    case Collective::SendRecv: return "send_recv";
  }
  return "?";
}

Collective collective_from_string(const std::string& s) {
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                       Collective::Broadcast, Collective::Reduce, Collective::AllToAll,
                       Collective::SendRecv})
    if (s == to_string(c)) return c;
  input_error("unknown collective '{}' (expected one of: all_reduce, all_gather, "
              "reduce_scatter, broadcast, reduce, all_to_all, send_recv)", s);
}

}  // namespace strata::costmodel
