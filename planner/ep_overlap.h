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
#include <vector>

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

// One forward layer of a micro-batch beside one backward layer of another, as Megatron-Core's
// layer schedule splits them (megatron/core/models/common/model_chunk_schedule_plan.py,
// TransformerLayerSchedulePlan.run, and models/gpt/fine_grained_callables.py at d98e8a64):
// `pre` is the attention block, the pre-MLP norm, the router, the shared experts and the
// dispatch's permute; `experts` the routed experts' node (a dense layer's MLP: no exchange);
// dispatch and combine the two all-to-alls. Seconds; wgrad parts are inside their node's
// backward.
struct MergedLayer {
  double pre_fwd = 0, dispatch_fwd = 0, experts_fwd = 0, combine_fwd = 0;
  double combine_bwd = 0, experts_bwd = 0, experts_wgrad = 0, dispatch_bwd = 0, pre_bwd = 0, pre_wgrad = 0;
  double compute() const { return pre_fwd + experts_fwd + experts_bwd + pre_bwd; }
  double exchange() const { return dispatch_fwd + combine_fwd + combine_bwd + dispatch_bwd; }
};

// How long a run of merged layers takes on a compute and a communication stream, in the order
// run() issues them: compute pre_fwd | experts_bwd | experts_fwd | pre_bwd, communication
// combine_bwd | dispatch_fwd | dispatch_bwd | combine_fwd, each waiting for what it consumes
// (experts_bwd for combine_bwd, dispatch_fwd for pre_fwd, dispatch_bwd for experts_bwd,
// experts_fwd for dispatch_fwd, combine_fwd for experts_fwd, pre_bwd for dispatch_bwd; a layer's
// pre_fwd for the previous layer's combine_fwd, its combine_bwd for the previous layer's
// pre_bwd). With `delay_wgrad` (--delay-wgrad-compute) the weight gradients leave the backward
// nodes: dispatch_bwd waits only for the experts' input gradient while their weight gradient
// runs beside it, and the block's weight gradient runs after its input gradient, beside the
// next layer's combine_bwd. The result is at least the compute and at most compute + exchange.
double merged_layers_s(const std::vector<MergedLayer>& layers, bool delay_wgrad);

// Compute lost to the SMs a hidden exchange holds: compute beside an exchange runs on the SMs
// the dispatcher leaves it, so each hidden second lengthens it by share / (1 - share) seconds,
// at most one (a share of 1 or more hides nothing).
double exchange_slowdown_s(double hidden_s, double comm_sm_share);

}  // namespace strata::planner
