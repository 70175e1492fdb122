// Megatron-Core's batch-level EP overlap (Strategy::ep_overlap, --overlap-moe-expert-parallel-comm):
// what it hides of the MoE token exchange, per layer group and per pipeline rank.
//
// How Megatron runs it (NVIDIA/Megatron-LM d98e8a64): megatron/core/pipeline_parallel/
// combined_1f1b.py merges the forward step of one micro-batch with the backward step of
// another ("Only exists in 1f1b steady state"); the fine-grained schedule runs the two on a
// compute and a communication stream, so the forward's dispatch / combine go beside the
// backward's compute and the backward's beside the forward's (the DeepSeek-V3 report's
// 1F1B overlap, sec. 3.2.1). The warm-up forwards and the cool-down backwards run alone;
// schedules.py (get_pp_rank_microbatches) adds one warm-up micro-batch when the overlap is on.
#pragma once
#include <cstdint>

namespace strata::planner {

// SMs DeepEP's dispatch and combine kernels run on under Megatron-Core's flex dispatcher:
// TransformerConfig.moe_deepep_num_sms, "historical default 20" (now moe_flex_dispatcher_num_sms,
// megatron/core/transformer/transformer_config.py at d98e8a64). The all-to-all dispatcher's
// NCCL kernels hold the cluster link's comm_sms instead (costmodel::comm_sm_share).
inline constexpr int kDeepEpDispatcherSms = 20;

// Share of one pipeline rank's forward (and backward) steps that run merged: the steady
// state of the schedule. pp 1: every step but the first forward and the last backward
// (combined_1f1b_schedule_for_no_pipelining). pp > 1 (interleaved; Megatron refuses the
// overlap without a virtual pipeline): m * vpp steps per rank less the warm-up of
// get_pp_rank_microbatches, (pp - rank - 1) * 2 + (vpp - 1) * pp + 1 (the group size per
// virtual stage is Megatron's default, pp). In [0, 1].
double merged_step_share(int pp, int vpp, std::int64_t microbatches, int rank);

// What one merged forward + backward of a layer group hides, and what it costs. Each
// direction's exchange runs beside the other step's compute, so it hides at most that
// compute (an upper bound: the layer-level slots of the DeepSeek-V3 schedule can leave some
// exchange out in the open when one slot's compute is short). Compute beside an exchange
// runs on the SMs the dispatcher leaves it: `comm_sm_share` of them are the exchange's, so
// each hidden second lengthens the compute by share / (1 - share) seconds, at most one (a
// share of 1 or more hides nothing).
struct HiddenExchange {
  double fwd_s = 0;     // of the forward's exchange, hidden behind the backward's compute
  double bwd_s = 0;     // of the backward's exchange, hidden behind the forward's compute
  double slowdown_s = 0;  // compute lost to the SMs the hidden exchange holds
};
HiddenExchange hidden_exchange(double fwd_compute_s, double fwd_exchange_s, double bwd_compute_s,
                               double bwd_exchange_s, double comm_sm_share);

}  // namespace strata::planner
