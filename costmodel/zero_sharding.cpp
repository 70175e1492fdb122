#include "costmodel/zero_sharding.h"

#include <algorithm>

namespace strata::costmodel {

ZeroGroupComm zero_group_comm(int zero, std::span<const ZeroShard> shards, double param_bytes, double grad_bytes,
                              double fwd_compute_s, double bwd_compute_s, bool full_recompute, bool prefetch,
                              const CollectiveCost& coll, bool recompute_regathers) {
  ZeroGroupComm r;
  if (zero < 2) return r;
  double rs = 0, ag = 0;  // one micro-batch's reduce-scatters and (ZeRO-3) one round of gathers
  for (const ZeroShard& sh : shards) {
    if (sh.group.size <= 1 || sh.params_rank <= 0) continue;
    rs += coll.time_s(Collective::ReduceScatter, sh.params_rank * grad_bytes, sh.group);
    if (zero < 3) continue;
    if (!sh.by_module)
      ag += coll.time_s(Collective::AllGather, sh.params_rank * param_bytes, sh.group) + sh.fetch_host_s;
    else
      for (double u : sh.units) ag += coll.time_s(Collective::AllGather, u * param_bytes, sh.group) + sh.fetch_host_s;
  }
  if (zero == 2) {
    r.bwd_comm_s = rs;
    r.bwd_exposed_s = std::max(0.0, rs - bwd_compute_s);
    return r;
  }
  const double bwd_gathers = full_recompute && recompute_regathers ? 2 * ag : ag;
  const double bwd_compute = bwd_compute_s + (full_recompute ? fwd_compute_s : 0.0);
  r.fwd_comm_s = ag;
  r.bwd_comm_s = bwd_gathers + rs;
  if (prefetch) {
    r.fwd_exposed_s = std::max(0.0, ag - fwd_compute_s);
    r.bwd_exposed_s = std::max(0.0, bwd_gathers + rs - bwd_compute);
  } else {
    // Gathers wait; the reduce-scatter still runs beside the rest of the backward.
    r.fwd_exposed_s = ag;
    r.bwd_exposed_s = bwd_gathers + std::max(0.0, rs - bwd_compute);
  }
  return r;
}

std::vector<double> coalesce_gathers(std::span<const double> modules, double bucket_params) {
  std::vector<double> out;
  double open = 0;
  for (double m : modules) {
    if (bucket_params > 0 && open > 0 && open + m <= bucket_params) {
      open += m;
      continue;
    }
    if (open > 0) out.push_back(open);
    open = m;
  }
  if (open > 0) out.push_back(open);
  return out;
}

ZeroGroupComm zero_group_comm(int zero, double params_rank, double param_bytes, double grad_bytes,
                              double fwd_compute_s, double bwd_compute_s, bool full_recompute,
                              bool prefetch, const CollectiveCost& coll, const PlacedGroup& group) {
  const ZeroShard one{params_rank, group};
  return zero_group_comm(zero, std::span<const ZeroShard>(&one, 1), param_bytes, grad_bytes, fwd_compute_s,
                         bwd_compute_s, full_recompute, prefetch, coll);
}

}  // namespace strata::costmodel
