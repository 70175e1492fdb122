#include "planner/ep_overlap.h"

#include <algorithm>

namespace strata::planner {

double merged_step_share(int pp, int vpp, std::int64_t microbatches, int rank) {
  if (microbatches <= 0 || pp < 1 || vpp < 1) return 0.0;
  const double steps = static_cast<double>(microbatches) * vpp;
  double alone = 1.0;  // pp 1: the first forward has no backward beside it
  if (pp > 1) alone = static_cast<double>((pp - rank - 1) * 2 + (vpp - 1) * pp + 1);
  return std::clamp((steps - alone) / steps, 0.0, 1.0);
}

HiddenExchange hidden_exchange(double fwd_compute_s, double fwd_exchange_s, double bwd_compute_s,
                               double bwd_exchange_s, double comm_sm_share) {
  HiddenExchange h;
  h.fwd_s = std::max(0.0, std::min(fwd_exchange_s, bwd_compute_s));
  h.bwd_s = std::max(0.0, std::min(bwd_exchange_s, fwd_compute_s));
  const double hidden = h.fwd_s + h.bwd_s;
  // An exchange holding every SM leaves the compute none: nothing is gained, nothing lost.
  const double share = std::max(0.0, comm_sm_share);
  h.slowdown_s = share >= 1.0 ? hidden : std::min(hidden, hidden * share / (1.0 - share));
  return h;
}

}  // namespace strata::planner
