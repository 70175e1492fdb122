#include "costmodel/zero_sharding.h"

#include <algorithm>

namespace strata::costmodel {

ZeroGroupComm zero_group_comm(int zero, double params_rank, double param_bytes, double grad_bytes,
                              double fwd_compute_s, double bwd_compute_s, bool full_recompute,
                              bool prefetch, const CollectiveCost& coll, const PlacedGroup& group) {
  ZeroGroupComm r;
  if (zero < 2 || group.size <= 1 || params_rank <= 0) return r;
  const double rs = coll.time_s(Collective::ReduceScatter, params_rank * grad_bytes, group);
  if (zero == 2) {
    r.bwd_comm_s = rs;
    r.bwd_exposed_s = std::max(0.0, rs - bwd_compute_s);
    return r;
  }
  const double ag = coll.time_s(Collective::AllGather, params_rank * param_bytes, group);
  const double bwd_gathers = full_recompute ? 2 * ag : ag;
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

}  // namespace strata::costmodel
