// How one layer group's costs (GroupCost) add up to the durations of its forward and
// backward steps under a recompute mode. Shared by the cost charging (stage times) and the
// event engine (stage partition, gradient buckets); private to strata_planner.
#pragma once
#include "planner/detail/sim_engine.h"
#include "planner/strategy.h"

namespace strata::planner::detail {

// Layer groups 1..L are the transformer blocks (0: embedding, L + 1: head and loss).
inline bool is_block(int group, int layers) { return group >= 1 && group <= layers; }

// Backward duration of one group including the recompute of its forward.
// The exposed context-parallel K/V exchange is counted in the compute parts here (the
// attention waits for it) and reported apart by cp_times().
inline void group_times(const GroupCost& c, int group, int layers, Recompute rc, double* fwd_compute,
                        double* fwd_tp, double* bwd_compute, double* bwd_tp) {
  // The MoE token exchange blocks the stage like an exposed TP collective; it rides in
  // the "tp" part here and is split out for the breakdown (ep_times).
  *fwd_compute = c.fwd_s + c.cp_fwd_s;
  *fwd_tp = c.tp_fwd_s + c.ep_fwd_s;
  *bwd_compute = c.bwd_s + c.cp_bwd_s;
  *bwd_tp = c.tp_bwd_s + c.ep_bwd_s;
  if (rc == Recompute::Full && is_block(group, layers)) {
    *bwd_compute += c.fwd_s + c.cp_fwd_s;
    *bwd_tp += c.tp_fwd_s + c.ep_fwd_s;
  } else if (rc == Recompute::Selective) {
    *bwd_compute += c.attn_fwd_s + c.cp_fwd_s;  // the attention re-run exchanges K/V again
  }
}

// The exposed K/V exchange of a group, forward and backward (recompute included).
inline void cp_times(const GroupCost& c, int group, int layers, Recompute rc, double* fwd, double* bwd) {
  *fwd = c.cp_fwd_s;
  *bwd = c.cp_bwd_s;
  if ((rc == Recompute::Full && is_block(group, layers)) || rc == Recompute::Selective)
    *bwd += c.cp_fwd_s;
}

}  // namespace strata::planner::detail
