// How one layer group's costs (GroupCost) add up to the durations of its forward and
// backward steps under a recompute mode. Shared by the cost charging (stage times) and the
// event engine (stage partition, gradient buckets); private to strata_planner.
#pragma once
#include <algorithm>
#include <vector>

#include "planner/detail/sim_engine.h"
#include "planner/strategy.h"

namespace strata::planner::detail {

// Layer groups 1..L are the transformer blocks (0: embedding, L + 1: head and loss).
inline bool is_block(int group, int layers) { return group >= 1 && group <= layers; }

// Selective recompute re-runs the attention core (strata's selective mode) unless the
// strategy names Megatron-Core modules; then those (core_attn among them or not).
inline bool recomputes_core_attn(const Strategy& s) {
  return s.recompute == Recompute::Selective && (!s.recompute_modules.any() || s.recompute_modules.core_attn);
}

// Forward time (and FLOPs) of the modules selective recompute re-runs, core attention apart.
inline double recomputed_modules_fwd(const GroupCost& c, const costmodel::RecomputeModules& m, bool flops) {
  const auto v = [&](const GroupCost::ModuleCost& x) { return flops ? x.flops_fwd : x.fwd_s; };
  double t = 0;
  if (m.layernorm) t += v(c.norm);
  if (m.mla_up_proj) t += v(c.mla_up);
  if (m.mlp) t += v(c.dense_mlp);
  if (m.per_op) t += v(c.per_op);
  if (m.moe) t += v(c.moe);
  else {  // parts of the MoE MLP, when the whole is not recomputed
    if (m.moe_act) t += v(c.moe_act);
    if (m.shared_experts) t += v(c.shared_experts);
  }
  return t;
}

// A cache key for the recompute a strategy asks for (mode and modules).
inline int recompute_key(const Strategy& s) {
  const costmodel::RecomputeModules& m = s.recompute_modules;
  const int bits = (m.layernorm ? 1 : 0) | (m.mla_up_proj ? 2 : 0) | (m.core_attn ? 4 : 0) | (m.mlp ? 8 : 0) |
                   (m.moe ? 16 : 0) | (m.moe_act ? 32 : 0) | (m.shared_experts ? 64 : 0) | (m.per_op ? 128 : 0);
  return static_cast<int>(s.recompute) + 4 * bits;
}

// Under full recompute, whether block `chunk[i]` of a model chunk re-runs its forward in the
// backward: every block, or with strategy.recompute_layers n the first n blocks of the chunk
// (Megatron-Core's block method, megatron/core/recompute.py at d98e8a64: layers 0..n-1 of
// each chunk checkpointed one by one, the rest kept). False for non-blocks and other modes.
inline bool block_reruns(const std::vector<int>& chunk, std::size_t i, int layers, const Strategy& s) {
  if (s.recompute != Recompute::Full || !is_block(chunk[i], layers)) return false;
  if (s.recompute_layers <= 0) return true;
  const auto before = std::count_if(chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(i),
                                    [&](int g) { return is_block(g, layers); });
  return before < s.recompute_layers;
}

// block_reruns for every group of a partition (chunk lists of group indices), by group index.
inline std::vector<char> rerun_blocks(const std::vector<std::vector<int>>& sl, std::size_t groups, int layers,
                                      const Strategy& s) {
  std::vector<char> reruns(groups, 0);
  for (const std::vector<int>& chunk : sl)
    for (std::size_t i = 0; i < chunk.size(); ++i)
      reruns[static_cast<std::size_t>(chunk[i])] = block_reruns(chunk, i, layers, s) ? 1 : 0;
  return reruns;
}

// Backward duration of one group including the recompute of its forward. `rerun`: under full
// recompute, whether this block re-runs (block_reruns; every block when not given).
// The exposed context-parallel K/V exchange is counted in the compute parts here (the
// attention waits for it) and reported apart by cp_times().
inline void group_times(const GroupCost& c, int group, int layers, const Strategy& s, double* fwd_compute,
                        double* fwd_tp, double* bwd_compute, double* bwd_tp, bool rerun = true) {
  const Recompute rc = s.recompute;
  // The MoE token exchange blocks the stage like an exposed TP collective; it rides in
  // the "tp" part here and is split out for the breakdown (ep_times).
  *fwd_compute = c.fwd_s + c.cp_fwd_s;
  *fwd_tp = c.tp_fwd_s + c.ep_fwd_s;
  *bwd_compute = c.bwd_s + c.cp_bwd_s;
  *bwd_tp = c.tp_bwd_s + c.ep_bwd_s;
  if (rc == Recompute::Full && is_block(group, layers) && rerun) {
    *bwd_compute += c.fwd_s + c.cp_fwd_s;
    *bwd_tp += c.tp_fwd_s + c.ep_fwd_s;
  } else if (rc == Recompute::Selective) {
    if (recomputes_core_attn(s)) *bwd_compute += c.attn_fwd_s + c.cp_fwd_s;  // re-exchanges K/V
    *bwd_compute += recomputed_modules_fwd(c, s.recompute_modules, false);
    if (s.recompute_modules.moe) *bwd_tp += c.moe_ep_fwd_s;  // the MoE re-run dispatches again
  }
}

// The exposed K/V exchange of a group, forward and backward (recompute included).
inline void cp_times(const GroupCost& c, int group, int layers, const Strategy& s, double* fwd, double* bwd,
                     bool rerun = true) {
  *fwd = c.cp_fwd_s;
  *bwd = c.cp_bwd_s;
  if ((s.recompute == Recompute::Full && is_block(group, layers) && rerun) || recomputes_core_attn(s)) *bwd += c.cp_fwd_s;
}

}  // namespace strata::planner::detail
