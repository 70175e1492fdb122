#include "costmodel/zero_sharding.h"

#include <algorithm>

namespace strata::costmodel {

ZeroGroupComm zero_group_comm(int zero, std::span<const ZeroShard> shards, double param_bytes, double grad_bytes,
                              double fwd_compute_s, double bwd_compute_s, bool full_recompute, bool prefetch,
                              const CollectiveCost& coll, bool recompute_regathers) {
  ZeroGroupComm r;
  if (zero < 2) return r;
  // One micro-batch's reduce-scatters and (ZeRO-3) one round of gathers, and the same
  // seconds weighted by the SM share their groups' kernels hold.
  double rs = 0, ag = 0, rs_sm = 0, ag_sm = 0;
  for (const ZeroShard& sh : shards) {
    if (sh.group.size <= 1 || sh.params_rank <= 0) continue;
    const double r_s = coll.time_s(Collective::ReduceScatter, sh.params_rank * grad_bytes, sh.group);
    rs += r_s;
    rs_sm += sh.sm_share * r_s;
    if (zero < 3) continue;
    double a_s = 0;
    std::size_t gathers = 1;
    if (!sh.by_module) {
      a_s = coll.time_s(Collective::AllGather, sh.params_rank * param_bytes, sh.group);
    } else {
      for (double u : sh.units) a_s += coll.time_s(Collective::AllGather, u * param_bytes, sh.group);
      gathers = sh.units.size();
    }
    ag += a_s + static_cast<double>(gathers) * sh.fetch_host_s;
    ag_sm += sh.sm_share * a_s;
  }
  // The hidden part of `traffic` (what `compute` covers) slows that compute by the traffic's
  // mean SM share.
  auto slowed = [](double traffic, double traffic_sm, double compute) {
    return traffic > 0 ? std::min(traffic, compute) * traffic_sm / traffic : 0.0;
  };
  if (zero == 2) {
    r.bwd_comm_s = rs;
    r.bwd_exposed_s = std::max(0.0, rs - bwd_compute_s) + slowed(rs, rs_sm, bwd_compute_s);
    return r;
  }
  const double regather = full_recompute && recompute_regathers ? 2.0 : 1.0;
  const double bwd_gathers = regather * ag, bwd_gathers_sm = regather * ag_sm;
  const double bwd_compute = bwd_compute_s + (full_recompute ? fwd_compute_s : 0.0);
  r.fwd_comm_s = ag;
  r.bwd_comm_s = bwd_gathers + rs;
  if (prefetch) {
    r.fwd_exposed_s = std::max(0.0, ag - fwd_compute_s) + slowed(ag, ag_sm, fwd_compute_s);
    r.bwd_exposed_s = std::max(0.0, bwd_gathers + rs - bwd_compute) +
                      slowed(bwd_gathers + rs, bwd_gathers_sm + rs_sm, bwd_compute);
  } else {
    // Gathers wait; the reduce-scatter still runs beside the rest of the backward.
    r.fwd_exposed_s = ag;
    r.bwd_exposed_s = bwd_gathers + std::max(0.0, rs - bwd_compute) + slowed(rs, rs_sm, bwd_compute);
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
                              bool prefetch, const CollectiveCost& coll, const PlacedGroup& group,
                              double sm_share) {
  ZeroShard one{params_rank, group};
  one.sm_share = sm_share;
  return zero_group_comm(zero, std::span<const ZeroShard>(&one, 1), param_bytes, grad_bytes, fwd_compute_s,
                         bwd_compute_s, full_recompute, prefetch, coll);
}

}  // namespace strata::costmodel
