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

double merged_layers_s(const std::vector<MergedLayer>& layers, bool delay_wgrad) {
  double comp = 0, comm = 0;               // when each stream is free
  double fwd_ready = 0, bwd_ready = 0;     // the previous layer's outputs, each direction
  for (const MergedLayer& l : layers) {
    const double experts_wgrad = delay_wgrad ? std::clamp(l.experts_wgrad, 0.0, l.experts_bwd) : 0.0;
    const double pre_wgrad = delay_wgrad ? std::clamp(l.pre_wgrad, 0.0, l.pre_bwd) : 0.0;
    const double combine_bwd_end = (comm = std::max(comm, bwd_ready) + l.combine_bwd);
    const double pre_fwd_end = (comp = std::max(comp, fwd_ready) + l.pre_fwd);
    const double experts_dgrad_end = (comp = std::max(comp, combine_bwd_end) + l.experts_bwd - experts_wgrad);
    const double dispatch_fwd_end = (comm = std::max(comm, pre_fwd_end) + l.dispatch_fwd);
    comp += experts_wgrad;
    const double dispatch_bwd_end = (comm = std::max(comm, experts_dgrad_end) + l.dispatch_bwd);
    const double experts_fwd_end = (comp = std::max(comp, dispatch_fwd_end) + l.experts_fwd);
    fwd_ready = (comm = std::max(comm, experts_fwd_end) + l.combine_fwd);
    bwd_ready = (comp = std::max(comp, dispatch_bwd_end) + l.pre_bwd - pre_wgrad);
    comp += pre_wgrad;
  }
  return std::max(comp, comm);
}

double exchange_slowdown_s(double hidden_s, double comm_sm_share) {
  const double share = std::max(0.0, comm_sm_share);
  return share >= 1.0 ? hidden_s : std::min(hidden_s, hidden_s * share / (1.0 - share));
}

}  // namespace strata::planner
