// ZeRO-2 and ZeRO-3 (FSDP) communication of one layer group for one micro-batch on one
// rank, and what the group's own compute leaves exposed.
//
// Stages (Rajbhandari et al. 2020, "ZeRO", sec. 5; memory: costmodel/memory_model.h):
//   1: optimizer state sharded over the gradient group; the whole gradient buffer is kept
//      and reduce-scattered once per iteration after the last micro-batch (Megatron's
//      distributed optimizer; the simulator's DP buckets), updated parameters all-gathered.
//   2: gradients sharded too: no rank keeps a whole gradient buffer, so each micro-batch's
//      gradients are reduce-scattered as the backward produces them (DeepSpeed stage 2's
//      reduction buckets; FSDP's post-backward reduce-scatter) instead of once per
//      iteration: one reduce-scatter of the group's gradients per micro-batch, issued
//      beside the group's backward compute.
//   3: parameters sharded too: the group's parameters are all-gathered before its forward
//      and again before its backward (they are freed after use), and its gradients
//      reduce-scattered after its backward, every micro-batch; under full recompute the
//      re-run forward gathers them once more where the stack says so (zero3_recompute_regather:
//      DeepSpeed stage 3 fetches parameters on every module pre-forward hook, the recomputed
//      forward included). Megatron-FSDP gathers a layer once for both the recomputed forward
//      and its backward: its units are marked pre-backward when the backward starts, the
//      recompute's forward hook gathers and keeps them, and the backward hook finds them
//      gathered (megatron/core/distributed/custom_fsdp/fully_sharded_data_parallel.py,
//      _pre_forward_param_unshard / _pre_backward, NVIDIA/Megatron-LM
//      1e057005959b75e8bc62f610a335bd03080bc659; the same in fsdp/src/megatron_fsdp/
//      megatron_fsdp.py at d98e8a64ddf34856e74b24714e3bedb2f5a39553).
//   No all-gather of updated parameters after the optimizer step (each rank updates only
//   the shard it keeps).
// Overlap: with prefetch (the stack's zero_prefetch; DeepSpeed stage3_prefetch_bucket_size
// default 5e7 elements, deepspeed/runtime/zero/config.py, commit
// cbf3d6616244b003b6c55e506f246b0e0cf00540; FSDP2 prefetches the next layer's all-gather)
// a gather runs beside the previous group's compute: exposed = max(0, traffic - compute)
// per group and pass. Without it every gather waits. Gradient reduce-scatters always run
// beside the remaining backward. What compute hides still costs it the SMs NCCL's kernels
// hold meanwhile (ZeroShard::sm_share, costmodel::comm_sm_share): each hidden second of a
// shard's traffic adds sm_share seconds to the exposed part, as the DP buckets' overlap
// does (planner/step_costs.cpp).
// Message sizes follow CollectiveCost (the whole gathered buffer): parameters in the
// compute dtype (2 bytes for bf16), gradients in the stack's grad_reduce_dtype.
// Gather unit (the stack's zero3_gather): FSDP2 and Megatron-FSDP gather a whole block in
// one collective; DeepSpeed stage 3 fetches each weight-holding submodule from its own
// pre-forward / pre-backward hook, one all-gather per module (partitioned_param_coordinator
// fetch_sub_module), so a block pays one collective latency per module and pass. Over
// hundreds of ranks that latency ((N - 1) ring steps across nodes) outgrows the bytes: the
// latency-bound ZeRO-3 of the ZeRO++ paper (arXiv 2306.10209). Modules at or below the
// persistence threshold are not gathered (ZeroShard::units leaves them out). Gradients are
// reduced per group either way (DeepSpeed buckets them by reduce_bucket_size).
// Mixture of experts: a group's routed-expert parameters are sharded over the expert
// data-parallel group (edp) and the rest over dp x cp, so one group may issue two gathers
// and two reduce-scatters, each on its own ranks (Megatron-FSDP keeps expert parameters in
// their own buffers, param_and_grad_buffer.py is_expert_param, sharded over the expert
// data-parallel group, mcore_fsdp_adapter.py get_expert_data_parallel_group:
// NVIDIA/Megatron-LM megatron/core/distributed/fsdp/ at
// d98e8a64ddf34856e74b24714e3bedb2f5a39553). They share the one communication stream, so
// their times add before the overlap with compute is taken.
#pragma once
#include <span>
#include <vector>

#include "costmodel/collective_cost.h"

namespace strata::costmodel {

struct ZeroGroupComm {
  double fwd_comm_s = 0, bwd_comm_s = 0;        // all traffic, one micro-batch
  double fwd_exposed_s = 0, bwd_exposed_s = 0;  // the part compute does not hide
};

// The part of a layer group's parameters (on one TP rank) that one group of ranks shards.
struct ZeroShard {
  double params_rank = 0;
  PlacedGroup group;
  // by_module: one all-gather per entry of `units` (parameters of each gathered module; the
  // persisted ones are not listed) instead of one of all `params_rank`.
  bool by_module = false;
  std::span<const double> units = {};
  // Host time each gather costs on the critical path (the stack's zero3_fetch_host_us:
  // hooks and launches of a framework that waits for each gather).
  double fetch_host_s = 0;
  // Share of the SMs NCCL's kernels hold while this shard's collectives run
  // (costmodel::comm_sm_share of `group`); the compute beside them runs on the rest.
  double sm_share = 0;
};

// Gathers of one pass when a framework coalesces consecutive modules' parameters into one
// collective up to `bucket_params` (DeepSpeed >= 0.6: the trace-driven prefetch issues one
// all_gather_coalesced for up to stage3_prefetch_bucket_size elements); a module larger than
// the bucket is gathered alone. bucket_params <= 0: one gather per module.
std::vector<double> coalesce_gathers(std::span<const double> modules, double bucket_params);

// shards: the group's parameters by the ranks that shard them (dense over dp x cp, routed
// experts over edp); a shard of one rank or no parameters costs nothing. fwd_compute_s /
// bwd_compute_s: the group's own compute for one micro-batch (bwd without the recompute).
// recompute_regathers: under full recompute, the re-run forward gathers the parameters
// again (the stack's zero3_recompute_regather). zero < 2: all zero.
ZeroGroupComm zero_group_comm(int zero, std::span<const ZeroShard> shards, double param_bytes, double grad_bytes,
                              double fwd_compute_s, double bwd_compute_s, bool full_recompute, bool prefetch,
                              const CollectiveCost& coll, bool recompute_regathers = true);
// One shard: all `params_rank` over `group`, its collectives holding `sm_share` of the SMs.
ZeroGroupComm zero_group_comm(int zero, double params_rank, double param_bytes, double grad_bytes,
                              double fwd_compute_s, double bwd_compute_s, bool full_recompute,
                              bool prefetch, const CollectiveCost& coll, const PlacedGroup& group,
                              double sm_share = 0);

}  // namespace strata::costmodel
