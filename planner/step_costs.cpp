// Cost charging, per step and per iteration: what the event engine (simulator.cpp) times
// each pipeline stage's forward and backward steps with, its pipeline links, the
// gradient reduction and the optimizer step, and the memory each pipeline rank holds. The
// per-op costs these add up come from layer_costs.cpp.
//
//  * Recompute: full re-runs each block's forward (compute + its TP collectives) inside
//    the backward; selective re-runs the attention core's forward only
//    (detail/group_times.h).
//  * Pipeline p2p: each TP rank sends its 1/tp slice of the b*s*h activation (or
//    gradient) to the same TP rank of the neighbouring stage: with sequence parallelism
//    the tensor is already scattered; without it Megatron's scatter/gather optimisation
//    (Narayanan et al. 2021, sec. 4.1) splits it and the receiver all-gathers it over the
//    TP group, which is charged too. The pair is placed by RankGrid (inter-node when the
//    stages sit on different nodes). A stack with blocking p2p makes the sending step
//    last until the transfer is done.
//  * DP gradient reduction: in the stack's gradient dtype (Megatron-LM all-reduces bf16
//    runs' gradients in fp32: accumulate_allreduce_grads_in_fp32), in the stack's buckets
//    (costmodel::grad_bucket_params), all-reduce (ZeRO-0) or reduce-scatter (ZeRO-1), over
//    the dp x cp ranks; routed-expert gradients over the edp group. Overlapped DP
//    collectives slow the compute beside them by the SMs they hold. With tied embeddings
//    and pp > 1 the first and last stage then all-reduce the embedding gradient.
//  * ZeRO-2/3 (costmodel/zero_sharding.h): every micro-batch reduce-scatters each group's
//    gradients (dense over dp x cp, routed experts over edp) beside its backward, and ZeRO-3 all-gathers its parameters before the
//    forward and the backward (once more under full recompute), prefetched per the stack;
//    the exposed part lengthens the steps and is reported as dp_comm. No end-of-iteration
//    gradient buckets then, and ZeRO-3 has no parameter all-gather after the step.
//  * Optimizer: gradient clipping makes every rank wait for the slowest one (global
//    norm), then Adam is memory-bound: params * adam_bytes_per_param / (memory bandwidth *
//    efficiency), over params / dp under ZeRO-1, which then all-gathers the updated
//    parameters (bf16) over the DP group; the stack's passes over the gradient buffer; FP8
//    recipes cast the FP8-run weights once.
//  * Memory per pipeline rank: costmodel::MemoryModel with the stack's settings.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "costmodel/fp8_linear.h"
#include "costmodel/zero_sharding.h"
#include "planner/detail/group_times.h"
#include "planner/ep_overlap.h"
#include "planner/detail/sim_engine.h"

namespace strata::planner::detail {

namespace {

using costmodel::Collective;
using costmodel::DType;

// Bytes Adam moves per parameter. Mixed precision: read fp32 grad, master, m, v (16),
// write master, m, v (12) and the bf16 weight (2) = 30. fp32: no separate master:
// read grad, weight, m, v (16), write weight, m, v (12) = 28.
double adam_bytes_per_param(DType d) { return costmodel::dtype_bytes(d) == 2 ? 30.0 : 28.0; }

costmodel::RecomputeMode memory_recompute(Recompute r) {
  switch (r) {
    case Recompute::None: return costmodel::RecomputeMode::None;
    case Recompute::Selective: return costmodel::RecomputeMode::Selective;
    case Recompute::Full: return costmodel::RecomputeMode::Full;
  }
  return costmodel::RecomputeMode::None;
}

double score_bytes(const costmodel::SoftwareStack& stack) {
  if (stack.flash_like()) return costmodel::kFlashScoreBytes;
  return stack.attention_dropout > 0 ? costmodel::kUnfusedScoreBytes
                                     : costmodel::kUnfusedNoDropoutScoreBytes;
}

}  // namespace

void SimEngine::stage_times(const Strategy& s, const Placement& pl, const GroupCostTable& t,
                            const std::vector<std::vector<int>>& sl) {
  // Which blocks re-run their forward in the backward: every block under full recompute, or
  // the first recompute_layers of each chunk, which follow the partition.
  const std::vector<char> reruns = rerun_blocks(sl, t.groups.size(), static_cast<int>(model_.layers), s);
  stage_compute_parts(s, t, sl, reruns);
  hide_ep_exchange(s, pl, t, sl);
  add_zero_comm(s, pl, t, sl, reruns);
  count_model_flops(s, t, reruns);
  pipeline_links(s, pl);
}

// Per virtual stage: forward / backward duration and their compute / TP parts.
void SimEngine::stage_compute_parts(const Strategy& s, const GroupCostTable& t,
                                    const std::vector<std::vector<int>>& sl, const std::vector<char>& reruns) {
  StageTimes& st = times_;
  const int layers = static_cast<int>(model_.layers);
  const int stages = s.pp * s.vpp;
  const auto n = static_cast<std::size_t>(stages);
  st.fwd.assign(n, 0.0);
  st.bwd.assign(n, 0.0);
  st.fwd_tp.assign(n, 0.0);
  st.bwd_tp.assign(n, 0.0);
  st.ep_fwd.assign(n, 0.0);
  st.ep_bwd.assign(n, 0.0);
  st.fwd_cp.assign(n, 0.0);
  st.bwd_cp.assign(n, 0.0);
  st.host_fwd.assign(n, 0.0);
  st.host_bwd.assign(n, 0.0);
  // A dispatcher that syncs the host every MoE layer (SoftwareStack::moe_host_sync) leaves the
  // CPU no queue to run ahead on: such a layer's forward lasts at least the CPU time that
  // issues it (TrainingLosses::moe_host_ms), the GPU waiting for the rest. The full-recompute
  // re-run issues the same forward again; a selective `moe` re-run issues only the MoE part
  // and is not charged; nor is a dispatcher that pads to capacity.
  const double host_s = stack_.moe_host_sync && !moe_pads_to_capacity()
                            ? cluster_.device.training_losses.moe_host_s()
                            : 0.0;
  for (int v = 0; v < stages; ++v) {
    double f = 0, ftp = 0, b = 0, btp = 0, fcp = 0, bcp = 0;
    for (int g : sl[v]) {
      const bool rerun = reruns[static_cast<std::size_t>(g)] != 0;
      double fc, ft, bc, bt, xf, xb;
      group_times(t.groups[g], g, layers, s, &fc, &ft, &bc, &bt, rerun);
      cp_times(t.groups[g], g, layers, s, &xf, &xb, rerun);
      f += fc + ft;
      ftp += ft;
      b += bc + bt;
      btp += bt;
      fcp += xf;
      bcp += xb;
      const GroupCost& gc = t.groups[g];
      const double ep_recompute =
          (rerun ? gc.ep_fwd_s : 0.0) +
          (s.recompute == Recompute::Selective && s.recompute_modules.moe ? gc.moe_ep_fwd_s : 0.0);
      st.ep_fwd[v] += gc.ep_fwd_s;
      st.ep_bwd[v] += gc.ep_bwd_s + ep_recompute;
      if (stack_.moe_shared_expert_overlap && !s.ep_overlap && gc.shared_experts.fwd_s > 0) {
        // The shared experts on their side stream beside the layer's exchange (Megatron-Core's
        // --moe-shared-expert-overlap; Megatron-Core refuses it beside the batch-level EP overlap,
        // which a job's ep_overlap then runs instead; a recompute's re-run is not hidden).
        const double hide_f = std::min(gc.ep_fwd_s, gc.shared_experts.fwd_s);
        const double hide_b = std::min(gc.ep_bwd_s, gc.shared_experts_bwd_s);
        ft -= hide_f, f -= hide_f, ftp -= hide_f, st.ep_fwd[v] -= hide_f;
        b -= hide_b, btp -= hide_b, st.ep_bwd[v] -= hide_b;
      }
      if (host_s > 0 && gc.experts_fwd_s > 0) {
        const double wait = std::max(0.0, host_s - (fc + ft));
        f += wait;
        st.host_fwd[v] += wait;
        if (rerun) b += wait, st.host_bwd[v] += wait;
      }
    }
    st.fwd[v] = f;
    st.bwd[v] = b;
    st.fwd_tp[v] = ftp;
    st.bwd_tp[v] = btp;
    st.fwd_cp[v] = fcp;
    st.bwd_cp[v] = bcp;
  }
}

// Megatron-Core's batch-level EP overlap (planner/ep_overlap.h): the merged steps of each
// pipeline rank hide part of their MoE token exchange behind the other micro-batch's compute,
// as far as Megatron's layer schedule lets them (merged_layers_s), and lose compute to the SMs
// the exchange holds. A virtual stage's forward and backward are charged the mean over its
// rank's steps (the merged share hides, the warm-up and cool-down steps do not), so the walk
// keeps timing one forward and one backward kind per stage. The merged forward and backward
// may belong to different chunks; each stage is paired with itself here (the partition
// balances the chunks), its forward layers in order beside its backward layers in reverse
// order, as Megatron pairs them.
void SimEngine::hide_ep_exchange(const Strategy& s, const Placement& pl, const GroupCostTable& t,
                                 const std::vector<std::vector<int>>& sl) {
  if (!s.ep_overlap) return;
  StageTimes& st = times_;
  const int layers = static_cast<int>(model_.layers);
  const double sm_share =
      stack_.moe_once_per_node()
          ? (cluster_.device.sm_count > 0 ? static_cast<double>(kDeepEpDispatcherSms) / cluster_.device.sm_count : 0.0)
          : costmodel::comm_sm_share(cluster_, pl.ep);
  std::vector<MergedLayer> merged_layers;
  for (int v = 0; v < s.pp * s.vpp; ++v) {
    const double merged = merged_step_share(s.pp, s.vpp, s.num_microbatches(), v % s.pp);
    const std::vector<int>& groups = sl[static_cast<std::size_t>(v)];
    const std::size_t n = groups.size();
    merged_layers.assign(n, MergedLayer{});
    double fwd_exchange = 0, bwd_exchange = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double fc, ft, bc, bt;
      const GroupCost& f = t.groups[static_cast<std::size_t>(groups[i])];
      group_times(f, groups[i], layers, s, &fc, &ft, &bc, &bt);
      MergedLayer& l = merged_layers[i];
      l.dispatch_fwd = f.ep_dispatch_fwd_s;
      l.combine_fwd = f.ep_fwd_s - f.ep_dispatch_fwd_s;
      l.experts_fwd = f.experts_fwd_s;
      // The exposed TP collectives wait in the compute stream, with the attention block.
      l.pre_fwd = std::max(0.0, fc + ft - f.ep_fwd_s - f.experts_fwd_s);
      fwd_exchange += f.ep_fwd_s;
      const int gb = groups[n - 1 - i];
      const GroupCost& b = t.groups[static_cast<std::size_t>(gb)];
      group_times(b, gb, layers, s, &fc, &ft, &bc, &bt);
      l.combine_bwd = b.ep_bwd_s - b.ep_dispatch_bwd_s;
      l.dispatch_bwd = b.ep_dispatch_bwd_s;
      // The routed experts' activation, when recomputed, re-runs inside their backward.
      l.experts_bwd = b.experts_bwd_s + (s.recompute_modules.moe_act ? b.moe_act.fwd_s : 0.0);
      l.experts_wgrad = b.experts_wgrad_s;
      l.pre_bwd = std::max(0.0, bc + bt - b.ep_bwd_s - l.experts_bwd);
      l.pre_wgrad = b.block_wgrad_s;
      bwd_exchange += b.ep_bwd_s;
    }
    double serial = 0;
    for (const MergedLayer& l : merged_layers) serial += l.compute() + l.exchange();
    const double hidden = std::max(0.0, serial - merged_layers_s(merged_layers, s.delay_wgrad));
    const double exchange = fwd_exchange + bwd_exchange;
    if (!(hidden > 0) || !(exchange > 0)) continue;
    // The hidden time is the exchange's, in proportion to each direction's; the forward's
    // exchange slows the backward's compute beside it, and the other way.
    const double fwd_hidden = hidden * fwd_exchange / exchange, bwd_hidden = hidden - fwd_hidden;
    const double slow = exchange_slowdown_s(hidden, sm_share);
    const double fwd_slow = slow * bwd_hidden / hidden, bwd_slow = slow - fwd_slow;
    const auto i = static_cast<std::size_t>(v);
    st.fwd[i] += merged * (fwd_slow - fwd_hidden);
    st.bwd[i] += merged * (bwd_slow - bwd_hidden);
    st.fwd_tp[i] -= merged * fwd_hidden;
    st.bwd_tp[i] -= merged * bwd_hidden;
    st.ep_fwd[i] -= merged * fwd_hidden;
    st.ep_bwd[i] -= merged * bwd_hidden;
  }
}

// ZeRO-2/3: per-micro-batch gradient reduce-scatters and (3) parameter all-gathers of
// each group, over the dp x cp ranks (routed experts over edp), left exposed by the group's
// compute.
void SimEngine::add_zero_comm(const Strategy& s, const Placement& pl, const GroupCostTable& t,
                              const std::vector<std::vector<int>>& sl, const std::vector<char>& reruns) {
  StageTimes& st = times_;
  const int stages = s.pp * s.vpp;
  const auto n = static_cast<std::size_t>(stages);
  const double grad_bytes = costmodel::dtype_bytes(stack_.grad_comm_dtype);
  st.fwd_zero.assign(n, 0.0);
  st.bwd_zero.assign(n, 0.0);
  if (!(s.zero >= 2 && (s.dp * s.cp > 1 || (model_.moe && s.edp() > 1)))) return;
  // Per layer group (the same for every pp / vpp / micro-batch count: cached).
  const bool full = s.recompute == Recompute::Full;
  // The ZeRO-3 re-gather follows the blocks that re-run their forward.
  auto per_group_comm = [&] {
    // Dense parameters shard over dp x cp, routed experts over edp (their own ranks).
    // Block-sized gathers unless the stack gathers module by module (then the group's
    // units, which leave out persisted modules).
    const bool by_module = stack_.zero3_gather == costmodel::Zero3Gather::Module;
    const double host_s = stack_.zero3_fetch_host_us * 1e-6;
    const double dense_sm = costmodel::comm_sm_share(cluster_, pl.dp);
    const double expert_sm = costmodel::comm_sm_share(cluster_, pl.edp);
    std::vector<costmodel::ZeroGroupComm> per_group(t.groups.size());
    for (std::size_t g = 0; g < t.groups.size(); ++g) {
      const GroupCost& c = t.groups[g];
      const std::vector<double> dense = costmodel::coalesce_gathers(c.zero3_dense_units,
                                                                    stack_.zero3_gather_bucket_params);
      const std::vector<double> expert = costmodel::coalesce_gathers(c.zero3_expert_units,
                                                                     stack_.zero3_gather_bucket_params);
      const costmodel::ZeroShard shards[] = {
          {c.params_rank - c.expert_params_rank, pl.dp, by_module, dense, host_s, dense_sm},
          {c.expert_params_rank, pl.edp, by_module, expert, host_s, expert_sm}};
      per_group[g] = costmodel::zero_group_comm(s.zero, shards, act_bytes_, grad_bytes, c.fwd_s, c.bwd_s,
                                                reruns[g] != 0, stack_.zero_prefetch, coll_,
                                                stack_.zero3_recompute_regather);
    }
    return per_group;
  };
  // Cached per layer-cost table and placement when every block or none re-runs; a partial
  // recompute's blocks depend on the partition, so it is costed afresh.
  std::vector<costmodel::ZeroGroupComm> partial;
  const std::vector<costmodel::ZeroGroupComm>* cached = nullptr;
  if (full && s.recompute_layers > 0) {
    partial = per_group_comm();
    cached = &partial;
  } else {
    auto key = std::make_tuple(&t, &pl, s.zero, full);
    auto it = zero_comm_.find(key);
    if (it == zero_comm_.end()) it = zero_comm_.emplace(key, per_group_comm()).first;
    cached = &it->second;
  }
  const std::vector<costmodel::ZeroGroupComm>& zc = *cached;
  for (int v = 0; v < stages; ++v) {
    for (int g : sl[v]) {
      st.fwd_zero[v] += zc[static_cast<std::size_t>(g)].fwd_exposed_s;
      st.bwd_zero[v] += zc[static_cast<std::size_t>(g)].bwd_exposed_s;
    }
    st.fwd[v] += st.fwd_zero[v];
    st.bwd[v] += st.bwd_zero[v];
  }
}

// Model, recompute and executed FLOPs per micro-batch, whole model.
void SimEngine::count_model_flops(const Strategy& s, const GroupCostTable& t, const std::vector<char>& reruns) {
  // A causal flash kernel skips the upper half of QK^T and AV, in the forward, the backward
  // (2x) and a recomputed forward alike; MFU's model count takes the whole s x s matrix.
  const double skipped = stack_.flash_like() ? 1 - costmodel::kCausalAttentionFraction : 0.0;
  double model_flops_mb = 0, recompute_flops = 0, attention_skipped = 0;
  for (std::size_t g = 0; g < t.groups.size(); ++g) {
    const GroupCost& c = t.groups[g];
    model_flops_mb += c.flops_fwd + c.flops_bwd;
    attention_skipped += 3 * c.attn_flops_fwd * skipped;
    if (reruns[g]) {
      recompute_flops += c.flops_fwd;
      attention_skipped += c.attn_flops_fwd * skipped;
    } else if (s.recompute == Recompute::Selective) {
      recompute_flops += (recomputes_core_attn(s) ? c.attn_flops_fwd : 0.0) +
                         recomputed_modules_fwd(c, s.recompute_modules, true);
      if (recomputes_core_attn(s)) attention_skipped += c.attn_flops_fwd * skipped;
    }
  }
  times_.model_flops_mb = model_flops_mb;
  times_.recompute_flops = recompute_flops;
  times_.executed_flops_mb = model_flops_mb + recompute_flops - attention_skipped;
}

// Pipeline links: p2p of the per-TP-rank slice (+ receiver all-gather without SP).
void SimEngine::pipeline_links(const Strategy& s, const Placement& pl) {
  StageTimes& st = times_;
  const int pp = s.pp, stages = s.pp * s.vpp;
  const auto n = static_cast<std::size_t>(stages);
  std::vector<double>& link = st.link;
  link.assign(pp > 1 ? static_cast<std::size_t>(pp) : 0, 0.0);
  if (pp > 1) {
    // One rank's s/cp tokens with context parallelism.
    const double full = static_cast<double>(s.micro_batch) * static_cast<double>(model_.seq_len) /
                        s.cp * static_cast<double>(model_.hidden) * act_bytes_;
    const double gather =
        (s.tp > 1 && !s.sequence_parallel) ? coll_.time_s(Collective::AllGather, full, pl.tp) : 0.0;
    for (int p = 0; p < pp; ++p)
      link[p] = coll_.time_s(Collective::SendRecv, full / s.tp, pl.link[p]) + gather;
  }

  // Blocking p2p (the stack's framework waits for its sends): the sending step lasts
  // until the transfer is done and the message is then already there. Forward of
  // virtual stage v sends over link[v mod pp]; its backward sends back over the link
  // below it.
  st.p2p_fwd.assign(n, 0.0);
  st.p2p_bwd.assign(n, 0.0);
  const bool blocking_p2p =
      stack_.p2p == costmodel::P2pMode::Blocking ||
      (stack_.p2p == costmodel::P2pMode::AsyncInterleaved && s.schedule != ScheduleKind::Interleaved);
  if (pp > 1 && blocking_p2p) {
    for (int v = 0; v < stages; ++v) {
      const int p = v % pp;
      if (v + 1 < stages) st.p2p_fwd[v] = link[p];
      if (v > 0) st.p2p_bwd[v] = link[(p - 1 + pp) % pp];
      st.fwd[v] += st.p2p_fwd[v];
      st.bwd[v] += st.p2p_bwd[v];
    }
    std::fill(link.begin(), link.end(), 0.0);
  }
}

std::vector<costmodel::StageMemory> SimEngine::memory(const Strategy& s, const Graph& gr,
                                                      const std::vector<std::vector<int>>& sl,
                                                      bool every_step) {
  const int m = static_cast<int>(s.num_microbatches());
  mem_in_.tp = s.tp;
  mem_in_.ep = s.ep;
  mem_in_.etp = s.etp;
  mem_in_.pp = s.pp;
  mem_in_.dp = s.dp;
  mem_in_.cp = s.cp;
  mem_in_.vpp = s.vpp;
  mem_in_.micro_batch = s.micro_batch;
  mem_in_.num_microbatches = m;
  mem_in_.zero = s.zero;
  mem_in_.recompute = memory_recompute(s.recompute);
  mem_in_.recompute_modules = s.recompute_modules;
  mem_in_.recompute_layers = s.recompute == Recompute::Full ? s.recompute_layers : 0;
  mem_in_.sequence_parallel = s.sequence_parallel;
  mem_in_.attention_score_bytes = score_bytes(stack_);
  mem_in_.grad_buffer_bytes = costmodel::dtype_bytes(stack_.grad_reduce_dtype);
  // fp32 (or tf32) training steps its 4-byte weights in place: no 16-bit copy, no master
  // weights (costmodel/memory_model.h).
  const bool fp32_weights = costmodel::dtype_bytes(dtype_) == 4;
  mem_in_.weight_bytes = fp32_weights ? 4.0 : 2.0;
  mem_in_.optimizer_state_bytes = fp32_weights ? 8.0 : 12.0;
  mem_in_.fp8_weights = fp8_;
  mem_in_.fp8_params = fp8_ && stack_.fp8_params;
  mem_in_.stage_layers = sl;
  // What the pipeline walk's peak_chunks is, known without walking (the search screens
  // memory before it walks).
  mem_in_.in_flight = PipelineWalk::peak_in_flight(s.schedule, s.pp, m, s.vpp, every_step);
  // The batch-level EP overlap warms up one micro-batch more (planner/ep_overlap.h).
  if (s.ep_overlap)
    for (int& f : mem_in_.in_flight) f = std::min(f + 1, m * s.vpp);
  // The head sits in the last chunk, whose backward 1F1B and the interleaved schedule run
  // right after its forward (the merged steps of the EP overlap hold two); GPipe holds all.
  mem_in_.head_in_flight = s.schedule == ScheduleKind::GPipe ? m : std::min(m, s.ep_overlap ? 2 : 1);
  mem_in_.storage.fp8_gemm_inputs = fp8_;
  mem_in_.storage.moe_probs_in_activation = stack_.moe_probs_in_activation;
  mem_in_.storage.gathered_gemm_inputs = !stack_.sp_backward_regather;
  mem_in_.loss_bytes_per_logit = stack_.loss_bytes_per_logit;
  mem_in_.sharded_params_fp32 = stack_.sharded_params_fp32;
  return gr.memory->per_stage(mem_in_);
}

GradReduce SimEngine::grad_reduce(const Strategy& s, const Placement& pl) const {
  GradReduce r;
  const int grad_group = s.dp * s.cp;
  r.active = grad_group > 1;
  r.collective = s.zero >= 1 && !(s.zero == 1 && stack_.zero1_grad_all_reduce) ? Collective::ReduceScatter
                                                                               : Collective::AllReduce;
  r.grad_bytes = costmodel::dtype_bytes(stack_.grad_comm_dtype);
  // Buckets as the stack's DDP forms them; a stack that does not overlap the reduction
  // reduces the whole gradient after the last backward.
  const double stack_bucket = costmodel::grad_bucket_params(stack_, grad_group);
  r.overlap = stack_.overlap_grad_reduce && stack_bucket > 0;
  r.bucket_params = r.overlap ? stack_bucket : std::numeric_limits<double>::infinity();
  // NCCL's kernels hold whole SMs: compute that runs beside a DP collective runs on the
  // rest, so each second of overlap costs `sm_share` seconds of compute (first order;
  // idle gaps of the pipeline inside the overlap are not told apart).
  r.sm_share = r.active ? costmodel::comm_sm_share(cluster_, pl.dp) : 0.0;
  return r;
}

double SimEngine::dense_grads_reduce_s(const GradReduce& r, const Placement& pl, double params) const {
  return coll_.time_s(r.collective, params * r.grad_bytes, pl.dp);
}

double SimEngine::expert_grads_reduce_s(const GradReduce& r, const Placement& pl, double params) const {
  return coll_.time_s(r.collective, params * r.grad_bytes, pl.edp);
}

double SimEngine::embedding_grad_sync_s(const Strategy& s, const Placement& pl) const {
  const double grad_bytes = costmodel::dtype_bytes(stack_.grad_comm_dtype);
  const double emb_params = static_cast<double>(model_.vocab) * model_.hidden / s.tp;
  return coll_.time_s(Collective::AllReduce, emb_params * grad_bytes, pl.first_last);
}

double SimEngine::optimizer_s(const Strategy& s, const costmodel::StageMemory& mem,
                              double fp8_weights_rank) const {
  const double mem_bw = mem_bytes_per_s_;
  const int grad_group = s.dp * s.cp;
  // ZeRO shards dense parameters over dp x cp and routed experts over edp.
  const double dense_params = mem.params - mem.expert_params;
  const double opt_params = s.zero >= 1 ? dense_params / grad_group + mem.expert_params / s.edp()
                                        : mem.params;
  double opt = mem_bw > 0 ? opt_params * adam_bytes_per_param(dtype_) / mem_bw : 0;
  opt += grad_buffer_passes_s(s, mem);
  // FP8 recipe: the updated weights are cast to FP8 (and transposed) once per step.
  if (fp8_ && mem_bw > 0) opt += costmodel::fp8_weight_cast_bytes(fp8_weights_rank) / mem_bw;
  return opt;
}

double SimEngine::grad_buffer_passes_s(const Strategy& s, const costmodel::StageMemory& mem) const {
  const int passes = (stack_.grad_buffer_zero ? 1 : 0) + (stack_.grad_buffer_nan_check ? 1 : 0) +
                     (stack_.grad_buffer_scale ? 2 : 0);
  if (passes == 0 || mem_bytes_per_s_ <= 0) return 0;
  // The buffer a rank keeps: whole up to ZeRO-1 (the distributed optimizer reduce-scatters
  // out of a full buffer), its shard from ZeRO-2 on.
  const int grad_group = s.dp * s.cp;
  const double dense = mem.params - mem.expert_params;
  const double buffer = s.zero >= 2 ? dense / grad_group + mem.expert_params / s.edp() : mem.params;
  // The norm and the scaling run per reduction bucket; the fill once over the buffer.
  const double per_bucket = costmodel::grad_bucket_params(stack_, grad_group);
  const double buckets = per_bucket > 0 ? std::max(1.0, std::ceil(buffer / per_bucket)) : 1.0;
  const int bucket_kernels = (stack_.grad_buffer_nan_check ? 1 : 0) + (stack_.grad_buffer_scale ? 1 : 0);
  return passes * buffer * costmodel::dtype_bytes(stack_.grad_reduce_dtype) / mem_bytes_per_s_ +
         ((stack_.grad_buffer_zero ? 1 : 0) + bucket_kernels * buckets) * kernel_overhead_s_;
}

double SimEngine::param_gather_s(const Strategy& s, const Placement& pl,
                                 const costmodel::StageMemory& mem) const {
  const int grad_group = s.dp * s.cp;
  const bool dp_comm = grad_group > 1;
  const double sm_share = dp_comm ? costmodel::comm_sm_share(cluster_, pl.dp) : 0.0;
  const double dense_params = mem.params - mem.expert_params;
  // ZeRO-3 ranks keep their parameter shard: nothing to gather after the step.
  double ag = (s.zero >= 1 && s.zero <= 2 && dp_comm)
                  ? coll_.time_s(Collective::AllGather, dense_params * act_bytes_, pl.dp) +
                        coll_.time_s(Collective::AllGather, mem.expert_params * act_bytes_, pl.edp)
                  : 0.0;
  // Overlapped with the next forward bucket by bucket: only the first bucket's
  // gather (the first layers' parameters) is waited for; the hidden rest slows that
  // forward by the SMs it holds.
  double ag_hidden = 0;
  if (stack_.overlap_param_gather && mem.params > 0) {
    const double full = ag;
    ag *= std::min(1.0, costmodel::grad_bucket_params(stack_, grad_group) / mem.params);
    ag_hidden = sm_share * (full - ag);
  }
  ag += ag_hidden;
  return ag;
}

std::vector<double> SimEngine::fp8_weights_per_rank(const Strategy& s, const GroupCostTable& t,
                                                    const std::vector<std::vector<int>>& sl) const {
  // FP8-run weights held by each pipeline rank (one TP rank).
  std::vector<double> fp8_weights_rank(static_cast<std::size_t>(s.pp), 0.0);
  if (fp8_)
    for (int v = 0; v < s.pp * s.vpp; ++v)
      for (int g : sl[v]) fp8_weights_rank[static_cast<std::size_t>(v % s.pp)] += t.groups[g].fp8_weights_rank;
  return fp8_weights_rank;
}

}  // namespace strata::planner::detail
