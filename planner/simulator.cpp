// The iteration simulator.
//
// What it charges (one iteration = global_batch / (micro_batch * dp) micro-batches per
// data-parallel replica):
//  * Compute of each layer group for one micro-batch from costmodel::OpCost (measured
//    GEMM tables where the device profile has them, roofline otherwise); a transformer
//    block whose shape, tp and SP the profile's block_table measured (the runtime's whole
//    block, costmodel/block_table.h) takes that time instead of its ops' sum, and, when the
//    row was also measured with a real TP group and the plan's group sits in one node, the
//    block's TP communication from it too. Compute dtype:
//    the device profile's compute_dtype (bf16 on the GPU profiles, fp32 on cpu-host).
//  * TP collectives per op from its models::TpComm tag: message = Op::tp_comm_bytes (one
//    micro-batch), on the TP group placed by RankGrid (CollectiveCost: NVLink inside a
//    node, hierarchical across nodes). Not overlapped with compute: they lengthen the
//    forward/backward steps. With sequence parallelism f/g become all-gather /
//    reduce-scatter pairs (Korthikanti et al. 2022).
//  * Recompute: full re-runs each block's forward (compute + its TP collectives) inside
//    the backward; selective re-runs the attention core's forward only.
//  * Pipeline p2p: each TP rank sends its 1/tp slice of the b*s*h activation (or
//    gradient) to the same TP rank of the neighbouring stage: with sequence parallelism
//    the tensor is already scattered; without it Megatron's scatter/gather optimisation
//    (Narayanan et al. 2021, sec. 4.1) splits it and the receiver all-gathers it over the
//    TP group, which is charged too. The pair is placed by RankGrid (inter-node when the
//    stages sit on different nodes). Sends run on a per-stage communication stream and
//    do not block the sender; a receive blocks the compute stream until the matching send
//    has arrived (k-th send from a to b matches the k-th receive on b from a).
//  * The pipeline: a discrete-event walk of every stage's build_schedule() list.
//  * DP gradient reduction: fp32 gradients (Megatron-LM all-reduces bf16 runs' gradients in
//    fp32: accumulate_allreduce_grads_in_fp32), in buckets of max(40M, 1M * dp) parameters
//    (Megatron DDP's default bucket size) launched as the backward of the last
//    micro-batch finishes their layers, on a DP stream that overlaps the rest of the
//    backward; all-reduce (ZeRO-0) or reduce-scatter (ZeRO-1). With tied embeddings and
//    pp > 1 the first and last stage then all-reduce the embedding gradient.
//  * Context parallel (cp > 1, costmodel/context_parallel_cost.h): every op is timed on
//    the rank's s/cp tokens; the attention core's FLOPs are 1/cp of the whole sequence's
//    (load-balanced causal chunks); the K/V exchange (ring p2p or all-gather, the stack's
//    cp_comm_type) that the attention compute does not hide lengthens forward and
//    backward (and the recomputed forward); gradients reduce (and ZeRO-1 shards) over the
//    dp x cp ranks. Measured block tables (taken without CP) are not used.
//  * ZeRO-2/3 (costmodel/zero_sharding.h): every micro-batch reduce-scatters each group's
//    gradients beside its backward, and ZeRO-3 all-gathers its parameters before the
//    forward and the backward (once more under full recompute), prefetched per the stack;
//    the exposed part lengthens the steps and is reported as dp_comm. No end-of-iteration
//    gradient buckets then, and ZeRO-3 has no parameter all-gather after the step.
//  * Optimizer: gradient clipping makes every rank wait for the slowest one (global
//    norm), then Adam is memory-bound: params * kAdamBytesPerParam / (memory bandwidth *
//    efficiency), over params / dp under ZeRO-1, which then all-gathers the updated
//    parameters (bf16) over the DP group, not overlapped.
//  * Precision: the stack's, or Strategy::precision in its place. fp8
//    (costmodel/fp8_linear.h): the blocks' linear layers run as FP8 GEMMs with their
//    cast passes, everything else in bf16; the optimizer step also casts the FP8-run
//    weights once; memory holds their FP8 copies; measured block tables (bf16) are not
//    used. A device without an fp8 peak is refused by name.
//
// Breakdown (critical-path attribution; the parts sum to iteration_s up to rounding):
// let q be the stage that finishes its gradients last (it gates the optimizer) and r the
// stage whose optimizer (+ ZeRO-1 all-gather) ends last. compute and tp_comm are q's busy
// time on its compute stream; the idle time of that stream (waiting on receives) is split
// into pp_comm = the p2p transfer time (incl. queueing behind earlier sends) along the
// dependency chain that ends at q's last compute step, capped by that idle time, and
// bubble = the rest; dp_comm = q's exposed gradient reduction (after its last backward)
// + r's ZeRO-1 parameter all-gather; optimizer = r's Adam step. ep_comm = q's MoE token
// dispatch / combine (all-to-all over ep, all-gather / reduce-scatter over etp), taken
// out of tp_comm (costmodel/expert_dispatch_cost.h); routed-expert gradients reduce over
// the edp group in the same buckets.
// bubble_fraction = bubble / iteration_s.
#include <algorithm>
#include <set>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.h"
#include "costmodel/context_parallel_cost.h"
#include "costmodel/cross_entropy_cost.h"
#include "costmodel/expert_dispatch_cost.h"
#include "costmodel/fp8_linear.h"
#include "costmodel/prediction_band.h"
#include "costmodel/userbuffers_gemm.h"
#include "costmodel/zero_sharding.h"
#include "costmodel/rank_grid.h"
#include "planner/detail/sim_engine.h"
#include "planner/simulator.h"
#include "costmodel/expert_dispatch_cost.h"
#include "planner/stage_partition.h"

namespace strata::planner {

namespace detail {

namespace {

using costmodel::Collective;
using costmodel::DType;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

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

bool is_block(int group, int layers) { return group >= 1 && group <= layers; }

// What one op costs on one rank, for `strata simulate --ops`: the FLOPs it runs there
// (sharded per Op::sharding; flash attention's causal half) or, for memory-bound ops, the
// bytes the cost model streams.
OpCostRow op_cost_row(const models::Op& op, int group, const costmodel::OpTime& ot, int tp, bool sp,
                      const costmodel::ExpertLayout& el, costmodel::DType dtype, bool flash) {
  OpCostRow r;
  r.group = group;
  r.name = op.name;
  r.kind = models::to_string(op.kind);
  r.fwd_s = ot.fwd_s;
  r.bwd_s = ot.bwd_s;
  r.source = costmodel::to_string(ot.source);
  const double total = op.flops_fwd + op.flops_bwd;
  if (op.routed_expert) {
    const costmodel::ExpertGemmShape g = costmodel::expert_gemm_shape(op, el);
    r.flops = 6.0 * static_cast<double>(g.m) * g.n * g.k * g.count;
  } else if (models::is_gemm(op.kind)) {  // forward, dgrad and wgrad of the rank's shard
    const models::GemmShape g = costmodel::sharded_gemm(op, tp, sp);
    r.flops = 6.0 * static_cast<double>(g.m) * g.n * g.k * op.gemm_count;
  } else if (op.kind == models::OpKind::AttentionCore) {
    r.flops = (flash ? costmodel::kCausalAttentionFraction : 1.0) * total / tp;
  } else {
    r.bytes_fwd = costmodel::op_work(op, tp, sp, dtype);
  }
  return r;
}

}  // namespace

std::string too_large_to_simulate(const Strategy& s) {
  const double m = static_cast<double>(s.num_microbatches());
  const double steps = 2.0 * s.pp * m * s.vpp;
  if (steps <= kMaxComputeSteps) return {};
  return fmt::format("strategy.global_batch ({}) gives {} micro-batches per replica; with pp {} "
                     "x vpp {} that is {:.3g} pipeline steps, more than the simulator's limit of "
                     "{:.0g} (use a larger micro_batch or a smaller global_batch)",
                     s.global_batch, s.num_microbatches(), s.pp, s.vpp, steps, kMaxComputeSteps);
}

namespace {

// The stack, with `precision` (bf16 | fp16 | fp8; empty: the stack's own) in place of its
// precision.
costmodel::SoftwareStack resolve_stack(const costmodel::SoftwareStack* stack,
                                       const costmodel::DeviceProfile& device,
                                       const std::string& precision) {
  costmodel::SoftwareStack s =
      stack ? *stack : costmodel::load_software_stack(costmodel::default_software_stack_name(device));
  if (!precision.empty()) s.precision = costmodel::dtype_from_string(precision);
  return s;
}

// The dtype of everything but the FP8-run linear layers: the stack's precision, which the
// device must have a peak for; bf16 under an FP8 recipe, which needs the device's FP8 peak.
DType stack_dtype(const costmodel::SoftwareStack& stack, const costmodel::DeviceProfile& device) {
  if (stack.precision == DType::Fp8) {
    if (!device.peak_tflops.count(DType::Fp8)) {
      std::vector<std::string> have;
      for (const auto& [d, tf] : device.peak_tflops) have.emplace_back(costmodel::to_string(d));
      input_error("precision fp8 needs FP8 tensor cores, but device '{}' has no fp8 peak "
                  "(peak_tflops lists {}); use --precision bf16 on it, or an H100 / H200 cluster",
                  device.name, fmt::join(have, ", "));
    }
    costmodel::SoftwareStack rest = stack;
    rest.precision = DType::Bf16;
    return stack_dtype(rest, device);
  }
  if (!device.peak_tflops.count(stack.precision)) {
    std::vector<std::string> have;
    for (const auto& [d, tf] : device.peak_tflops) have.emplace_back(costmodel::to_string(d));
    input_error("stack '{}' trains in {} but device '{}' has no {} peak (peak_tflops lists {}); "
                "pick a stack with one of those precisions (`strata stacks`)",
                stack.name, costmodel::to_string(stack.precision), device.name,
                costmodel::to_string(stack.precision), fmt::join(have, ", "));
  }
  return stack.precision;
}

double score_bytes(const costmodel::SoftwareStack& stack) {
  if (stack.flash_like()) return costmodel::kFlashScoreBytes;
  return stack.attention_dropout > 0 ? costmodel::kUnfusedScoreBytes
                                     : costmodel::kUnfusedNoDropoutScoreBytes;
}

// Time a collective issued beside `hidden_by` seconds of independent compute leaves
// exposed (ideal overlap: the longer of the two sets the pace).
double exposed(double comm_s, double hidden_by_s) { return std::max(0.0, comm_s - hidden_by_s); }

}  // namespace

SimEngine::SimEngine(const models::ModelSpec& model, const costmodel::ClusterSpec& cluster,
                     const costmodel::SoftwareStack* stack, const std::string& precision)
    : model_(model),
      cluster_(cluster),
      stack_(resolve_stack(stack, cluster.device, precision)),
      op_cost_(cluster.device, costmodel::op_cost_options(stack_, cluster.device)),
      blocks_(cluster.device.block_table),
      coll_(cluster),
      dtype_(stack_dtype(stack_, cluster.device)),
      fp8_(stack_.precision == DType::Fp8),
      walk_(std::make_unique<PipelineWalk>()) {
  act_bytes_ = costmodel::dtype_bytes(dtype_);
  mem_bytes_per_s_ = cluster.device.memory_bandwidth_gbps * 1e9 * cluster.device.memory_efficiency;
  kernel_overhead_s_ = op_cost_.options().kernel_overhead_s;
}

const SimEngine::Graph& SimEngine::graph_for(std::int64_t micro_batch, int cp) {
  const auto key = std::make_pair(micro_batch, cp);
  auto it = graphs_.find(key);
  if (it != graphs_.end()) return it->second;
  models::ModelSpec local = model_;
  local.seq_len = model_.seq_len / cp;  // validate() made cp divide it (2*cp chunks)
  Graph g;
  g.graph = std::make_unique<models::ModelGraph>(models::ModelGraph::build(local, micro_batch));
  g.memory = std::make_unique<costmodel::MemoryModel>(*g.graph, cluster_.device);
  return graphs_.emplace(key, std::move(g)).first->second;
}

const Placement& SimEngine::placement_for(const Strategy& s) {
  const auto key = std::make_tuple(s.tp, s.pp, s.dp, s.cp, s.rank_order, s.ep, s.etp);
  auto it = placements_.find(key);
  if (it != placements_.end()) return it->second;
  const costmodel::RankGrid grid(s.dp, s.tp, s.pp, s.rank_order, s.cp);
  const int gpn = cluster_.gpus_per_node;
  Placement pl;
  pl.tp = costmodel::placed_group(grid, costmodel::Axis::Tp, gpn);
  pl.cp = costmodel::placed_group(grid, costmodel::Axis::Cp, gpn);
  if (s.cp == 1) {
    pl.dp = costmodel::placed_group(grid, costmodel::Axis::Dp, gpn);
  } else {
    // Gradients reduce over the dp x cp ranks that share a (tp, pp) coordinate; the worst
    // placed of those groups sets the time.
    bool first = true;
    for (int t = 0; t < s.tp; ++t)
      for (int p = 0; p < s.pp; ++p) {
        std::vector<int> ranks;
        for (int d = 0; d < s.dp; ++d)
          for (int c = 0; c < s.cp; ++c) ranks.push_back(grid.rank(costmodel::RankCoords{d, t, p, c}));
        const costmodel::PlacedGroup g = costmodel::placed_ranks(ranks, gpn);
        if (first || g.nodes_spanned > pl.dp.nodes_spanned ||
            (g.nodes_spanned == pl.dp.nodes_spanned &&
             g.ranks_per_node_in_group < pl.dp.ranks_per_node_in_group))
          pl.dp = g;
        first = false;
      }
  }
  pl.edp = pl.dp;
  // Expert groups whenever the model has experts: with ep = etp = 1 and tp > 1 the experts
  // are still replicated over all tp x dp ranks of a stage (edp = tp x dp); cp is 1 there
  // (expert_parallel.cpp refuses cp > 1 with experts).
  if (model_.moe && s.rank_order == "tp-dp-pp") {
    using costmodel::ExpertAxis;
    pl.ep = costmodel::placed_expert_group(grid, s.ep, s.etp, ExpertAxis::Ep, gpn);
    pl.etp = costmodel::placed_expert_group(grid, s.ep, s.etp, ExpertAxis::Etp, gpn);
    pl.edp = costmodel::placed_expert_group(grid, s.ep, s.etp, ExpertAxis::Edp, gpn);
  }
  if (s.pp > 1) {
    for (int p = 0; p + 1 < s.pp; ++p) pl.link.push_back(costmodel::placed_pp_pair(grid, p, gpn));
    pl.first_last = costmodel::placed_ranks(
        {grid.rank(costmodel::RankCoords{0, 0, s.pp - 1}), grid.rank(costmodel::RankCoords{0, 0, 0})},
        gpn);
    pl.link.push_back(pl.first_last);  // wrap-around link of interleaved schedules
  }
  return placements_.emplace(key, std::move(pl)).first->second;
}

const GroupCostTable& SimEngine::costs_for(const Strategy& s, const Placement& pl) {
  const bool moe = model_.moe.has_value();
  const auto key = std::make_tuple(s.micro_batch, s.tp, s.sequence_parallel, pl.tp.size,
                                   pl.tp.nodes_spanned, pl.tp.ranks_per_node_in_group, s.cp,
                                   pl.cp.nodes_spanned, moe ? s.dp : 0, moe ? s.ep : 0,
                                   moe ? s.etp : 0);
  auto it = costs_.find(key);
  if (it != costs_.end()) return it->second;

  // With context parallelism every op runs on the rank's s/cp tokens (the local graph);
  // the attention core's queries still meet all s keys: its FLOPs are cp times the local
  // graph's s/cp x s/cp (load-balanced causal chunks give every rank 1/cp of the work).
  const int cp = s.cp;
  const models::ModelGraph& g = *graph_for(s.micro_batch, cp).graph;
  const models::ModelGraph& whole = *graph_for(s.micro_batch).graph;
  const int tp = s.tp;
  const bool sp = s.sequence_parallel;
  GroupCostTable t;
  t.groups.resize(g.groups().size());
  const int layers = static_cast<int>(g.groups().size()) - 2;
  const std::string signature = blocks_.empty() ? std::string() : costmodel::block_signature(g.spec());
  auto coll = [&](Collective c, double bytes) {
    const auto e = coll_.estimate(c, bytes, pl.tp);
    if (e.source != costmodel::TimeSource::Roofline) t.tp_measured = true;
    return e.time_s;
  };
  costmodel::ExpertLayout el;
  el.tp = tp, el.sequence_parallel = sp, el.ep = s.ep, el.etp = s.etp;
  if (moe) el.tokens_factor = costmodel::expert_tokens_factor(*model_.moe);
  for (std::size_t gi = 0; gi < g.groups().size(); ++gi) {
    const models::LayerGroup& lg = g.groups()[gi];
    GroupCost& c = t.groups[gi];
    c.flops_fwd = lg.flops_fwd;
    c.flops_bwd = lg.flops_bwd;
    c.flops_fwd *= cp;
    c.flops_bwd *= cp;
    for (std::size_t v : lg.ops) {
      models::Op op = g.op(v);
      if (cp > 1 && op.kind == models::OpKind::AttentionCore) {
        c.flops_fwd += (cp - 1) * op.flops_fwd * cp;  // the group's FLOPs: whole sequence
        c.flops_bwd += (cp - 1) * op.flops_bwd * cp;
        op.flops_fwd *= cp;
        op.flops_bwd *= cp;
      }
      // Routed experts: a grouped GEMM at the per-expert shape of this layout, the token
      // exchange around them, and the permutes (memory passes) on the compute stream.
      // (FP8 with experts is refused by validation: expert_parallel.cpp.)
      const bool in_fp8 = fp8_ && costmodel::runs_in_fp8(op.kind);
      costmodel::OpTime ot = op.routed_expert
                                 ? costmodel::expert_gemm_time(op_cost_.gemm(), op, el, dtype_)
                                 : op_cost_.time(op, tp, sp, in_fp8 ? DType::Fp8 : dtype_);
      // The op's GEMMs as the stack runs them: forward, and the backward's input-gradient
      // (dgrad) and weight-gradient (wgrad) halves; userbuffers cut some into chunks
      // (costmodel/userbuffers_gemm.h), which the collectives below are pipelined with.
      const bool ub = stack_.overlap_tp_comm && sp && tp > 1;  // userbuffers overlap needs SP
      const costmodel::UserbuffersChunks chunks =
          ub && models::is_gemm(op.kind) ? costmodel::userbuffers_chunks(op, tp) : costmodel::UserbuffersChunks{};
      double gemm_f = models::is_gemm(op.kind) ? ot.fwd_s : 0.0;
      double dgrad = models::is_gemm(op.kind) ? ot.bwd_s / 2 : 0.0, wgrad = dgrad;  // equal FLOPs
      if (chunks.fwd > 1 || chunks.dgrad > 1) {
        const models::GemmShape g = costmodel::sharded_gemm(op, tp, sp);
        const DType gd = in_fp8 ? DType::Fp8 : dtype_;
        const auto whole = costmodel::chunked_gemm_time(op_cost_.gemm(), g.m, g.n, g.k, {}, gd);
        const auto parts = costmodel::chunked_gemm_time(op_cost_.gemm(), g.m, g.n, g.k, chunks, gd);
        const double count = static_cast<double>(op.gemm_count);
        ot.fwd_s += count * (parts.fwd_s - whole.fwd_s);
        ot.bwd_s += count * (parts.dgrad_s - whole.dgrad_s);
        gemm_f = ot.fwd_s;
        dgrad = count * parts.dgrad_s;
        wgrad = count * parts.wgrad_s;
      }
      if (op.ep_comm != models::EpComm::None) {
        const costmodel::DispatchTime dt = costmodel::dispatch_time(coll_, op, el, pl.ep, pl.etp, act_bytes_);
        c.ep_fwd_s += dt.fwd_s;
        c.ep_bwd_s += dt.bwd_s;
        const double permute = costmodel::dispatch_bytes(op, el, act_bytes_).permute;
        if (mem_bytes_per_s_ > 0) {
          c.fwd_s += permute / mem_bytes_per_s_ + kernel_overhead_s_;
          c.bwd_s += permute / mem_bytes_per_s_ + kernel_overhead_s_;
        }
      }
      c.fwd_s += ot.fwd_s;
      c.bwd_s += ot.bwd_s;
      if (models::is_gemm(op.kind)) {
        if (ot.source == costmodel::TimeSource::Roofline) t.gemm_roofline = true;
        else t.gemm_measured = true;
      }
      if (op.kind == models::OpKind::AttentionCore) {
        c.attn_fwd_s += ot.fwd_s;
        c.attn_flops_fwd += op.flops_fwd * cp;
        if (cp > 1) {
          const double kv = costmodel::cp_kv_bytes_per_rank(
              static_cast<double>(s.micro_batch), static_cast<double>(model_.seq_len),
              static_cast<double>(model_.kv_dim()), tp, cp, act_bytes_);
          const costmodel::CpAttentionComm e = costmodel::cp_attention_comm(
              stack_.cp_comm, cp, kv, ot.fwd_s, ot.bwd_s, coll_, pl.cp);
          c.cp_fwd_s += e.fwd_exposed_s;
          c.cp_bwd_s += e.bwd_exposed_s;
        }
      }
      // Parameters do not depend on the sequence split: count them on the whole graph
      // (learned position embeddings have s rows).
      const models::Op& whole_op = whole.op(v);
      const double op_params_rank =
          whole_op.routed_expert ? whole_op.params / (static_cast<double>(s.ep) * s.etp)
          : whole_op.sharding == models::Sharding::Replicated ? whole_op.params
                                                                : whole_op.params / tp;
      c.params_rank += op_params_rank;
      if (op.routed_expert) c.expert_params_rank += op_params_rank;
      if (in_fp8) c.fp8_weights_rank += costmodel::fp8_weights(whole_op) / tp;
      // Accumulating the weight gradient into the main gradient (grad_reduce_dtype) every
      // micro-batch. Fused (Megatron --gradient-accumulation-fusion, TE
      // fuse_wgrad_accumulation): the wgrad GEMM reads and writes the main gradient with
      // beta = 1 instead of writing a fresh gradient in the compute dtype (the table's GEMM):
      // 2 x main - compute bytes more per weight, no extra kernel (TransformerEngine v1.9
      // e79d915a module/layernorm_linear.py and linear.py: out = weight.main_grad,
      // accumulate after the first micro-batch ever). Otherwise, and for the weights of
      // non-GEMM ops (norms, embeddings) in any case, one add kernel per weight reads the
      // running main gradient and the new gradient and writes the sum (Megatron's DDP
      // hook main_grad.add_(grad), megatron/core/distributed/distributed_data_parallel.py
      // at core_r0.8.0 baf94af3; megatron/model/distributed.py at v2.5 e269e200).
      double grad_acc_s = 0;
      if (op_params_rank > 0 && mem_bytes_per_s_ > 0) {
        const double main_bytes = costmodel::dtype_bytes(stack_.grad_reduce_dtype);
        if (stack_.fused_grad_accumulation && models::is_gemm(op.kind))
          grad_acc_s = op_params_rank * std::max(0.0, 2.0 * main_bytes - act_bytes_) / mem_bytes_per_s_;
        else
          grad_acc_s = op_params_rank * (2.0 * main_bytes + act_bytes_) / mem_bytes_per_s_ + kernel_overhead_s_;
        c.bwd_s += grad_acc_s;
      }
      if (record_ops_ && (gi == 1 || static_cast<int>(gi) == layers + 1)) {
        t.ops.push_back(op_cost_row(op, static_cast<int>(gi), ot, tp, sp, el, in_fp8 ? DType::Fp8 : dtype_,
                                    stack_.flash_like()));
        t.ops.back().bwd_s += grad_acc_s;  // into the main gradient, as charged above
        if (op.kind == models::OpKind::Loss && op.logits > 0)  // the cross-entropy passes it charged
          t.ops.back().bytes_fwd =
              op.logits / tp *
              costmodel::cross_entropy_work(stack_.fused_cross_entropy, std::max<double>(2, act_bytes_))
                  .fwd_bytes_per_logit;
      }
      if (tp == 1 || op.tp_comm == models::TpComm::None) continue;
      // tp_comm_bytes assume 2-byte activations; the loss' reductions are fp32 already.
      const double bytes = op.kind == models::OpKind::Loss ? op.tp_comm_bytes
                                                           : op.tp_comm_bytes * act_bytes_ / 2.0;
      // The op's own GEMMs (above) hide its collective where the stack overlaps them.
      const bool async_bwd = stack_.overlap_tp_backward;
      // A userbuffers kernel holding SMs beside its GEMM ("pipeline": the row-parallel
      // forward's reduce-scatter; "bulk": the column-parallel backward's all-gather and
      // reduce-scatter) slows the GEMM for as long as both run, as the DP collectives do.
      const double ub_share =
          ub && cluster_.device.sm_count > 0
              ? std::min(1.0, static_cast<double>(stack_.tp_comm_sms) / cluster_.device.sm_count)
              : 0.0;
      auto ub_slowdown = [&](double comm_s, double gemm_s) { return ub_share * std::min(comm_s, gemm_s); };
      switch (op.tp_comm) {
        case models::TpComm::CopyForwardAllReduceBackward:
        case models::TpComm::AllGatherForwardReduceScatterBackward:
          // Column-parallel input. Backward: the input gradient's all-reduce (no SP) or
          // reduce-scatter (SP) can run beside the wgrad GEMM; with SP the layer kept only
          // its sequence shard, so the all-gather is re-done before the GEMMs.
          if (sp) {
            const double ag = coll(Collective::AllGather, bytes);
            const double rs = coll(Collective::ReduceScatter, bytes);
            c.tp_fwd_s += ub ? costmodel::ring_exchange_exposed(ag, gemm_f, chunks.fwd) : ag;  // copy engines
            c.tp_bwd_s += (async_bwd || ub) ? exposed(ag, dgrad) : ag;
            c.tp_bwd_s += (async_bwd || ub) ? exposed(rs, wgrad) : rs;
            c.tp_bwd_s += ub_slowdown(ag, dgrad) + ub_slowdown(rs, wgrad);  // bulk
          } else {
            const double ar = coll(Collective::AllReduce, bytes);
            c.tp_bwd_s += async_bwd ? exposed(ar, wgrad) : ar;
          }
          break;
        case models::TpComm::AllReduceForwardCopyBackward:
        case models::TpComm::ReduceScatterForwardAllGatherBackward:
          // Row-parallel output: the forward's reduction needs the GEMM's result and the
          // backward's all-gather feeds the dgrad GEMM: exposed unless pipelined in chunks
          // with the GEMM (userbuffers).
          if (sp) {
            const double rs = coll(Collective::ReduceScatter, bytes);
            const double ag = coll(Collective::AllGather, bytes);
            c.tp_fwd_s += ub ? costmodel::pipeline_exposed(rs, gemm_f, chunks.fwd) : rs;
            c.tp_fwd_s += ub_slowdown(rs, gemm_f);  // pipeline
            c.tp_bwd_s += ub ? costmodel::ring_exchange_exposed(ag, dgrad, chunks.dgrad) : ag;  // copy engines
          } else {
            c.tp_fwd_s += coll(Collective::AllReduce, bytes);
          }
          break;
        case models::TpComm::VocabAllReduce:
          // The embedding's partial sums go to the sequence-parallel region with SP.
          c.tp_fwd_s += coll(sp && op.kind == models::OpKind::Embedding ? Collective::ReduceScatter
                                                                       : Collective::AllReduce,
                             bytes);
          break;
        case models::TpComm::None: break;
      }
    }
    // A measured block replaces the sum of its ops' compute; its attention forward
    // (selective recompute) and TP collectives stay per op.
    // (Measured without context parallelism: not used when cp > 1.)
    // Measured blocks ran in the profile's dtype, not with FP8 linear layers.
    if (!blocks_.empty() && cp == 1 && !fp8_ && is_block(static_cast<int>(gi), layers)) {
      if (auto e = blocks_.estimate(signature, tp, sp, s.micro_batch)) {
        c.fwd_s = e->fwd_s;
        c.bwd_s = e->bwd_s;
        t.blocks_measured = true;
        // Measured with a real group inside one node: the block's TP collectives as the
        // runtime meets them replace the per-collective table for groups placed alike.
        if (e->has_tp && pl.tp.size == tp && pl.tp.nodes_spanned == 1) {
          c.tp_fwd_s = e->tp_fwd_s;
          c.tp_bwd_s = e->tp_bwd_s;
          t.tp_blocks_measured = true;
        }
      }
    }
  }
  return costs_.emplace(key, std::move(t)).first->second;
}

namespace {

// Backward duration of one group including the recompute of its forward.
// The exposed context-parallel K/V exchange is counted in the compute parts here (the
// attention waits for it) and reported apart by cp_times().
void group_times(const GroupCost& c, int group, int layers, Recompute rc, double* fwd_compute,
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
void cp_times(const GroupCost& c, int group, int layers, Recompute rc, double* fwd, double* bwd) {
  *fwd = c.cp_fwd_s;
  *bwd = c.cp_bwd_s;
  if ((rc == Recompute::Full && is_block(group, layers)) || rc == Recompute::Selective)
    *bwd += c.cp_fwd_s;
}

}  // namespace

const costmodel::PredictionBand& SimEngine::band_for(const Strategy& s) {
  auto it = bands_.find(s.gpus());
  if (it == bands_.end())
    it = bands_.emplace(s.gpus(), costmodel::prediction_band(
                                      stack_.name, cluster_.device.name,
                                      graph_for(s.micro_batch).graph->total_params() / 1e9,
                                      s.gpus(), model_.seq_len, cluster_.device.training_losses.present))
             .first;
  return it->second;
}

const std::vector<std::vector<int>>& SimEngine::partition_for(const Strategy& s,
                                                              const GroupCostTable& t) {
  const int stages = s.pp * s.vpp;
  const auto key = std::make_tuple(&t, stages, static_cast<int>(s.recompute));
  auto it = partitions_.find(key);
  if (it != partitions_.end()) return it->second;
  std::vector<double> cost(t.groups.size());
  const int layers = static_cast<int>(model_.layers);
  for (std::size_t g = 0; g < t.groups.size(); ++g) {
    double fc, ft, bc, bt;
    group_times(t.groups[g], static_cast<int>(g), layers, s.recompute, &fc, &ft, &bc, &bt);
    cost[g] = fc + ft + bc + bt;
  }
  return partitions_.emplace(key, StagePartition::balance(cost, stages).stages()).first->second;
}

namespace {

void check_stage_layers(const std::vector<std::vector<int>>& sl, int stages, int groups) {
  if (static_cast<int>(sl.size()) != stages)
    input_error("stage_layers has {} virtual stages, expected pp x vpp = {}", sl.size(), stages);
  int next = 0;
  for (std::size_t v = 0; v < sl.size(); ++v) {
    if (sl[v].empty()) input_error("stage_layers[{}] is empty", v);
    for (int g : sl[v]) {
      if (g != next)
        input_error("stage_layers[{}] lists layer group {} where {} was expected (groups must "
                    "cover 0..{} once, in order)",
                    v, g, next, groups - 1);
      ++next;
    }
  }
  if (next != groups)
    input_error("stage_layers covers layer groups 0..{}, expected 0..{}", next - 1, groups - 1);
}

}  // namespace

void SimEngine::require_cp_supported(const Strategy& s) const {
  if (s.cp > 1 && !stack_.flash_like())
    input_error("strategy.cp ({}) > 1 needs a flash / cuDNN attention kernel, but stack '{}' runs "
                "unfused attention (context parallel attention is built on the fused kernels)",
                s.cp, stack_.name);
}

void SimEngine::stage_times(const Strategy& s, const Placement& pl, const GroupCostTable& t,
                            const std::vector<std::vector<int>>& sl) {
  StageTimes& st = times_;
  const int layers = static_cast<int>(model_.layers);
  const int pp = s.pp, vpp = s.vpp, stages = pp * vpp;
  const auto n = static_cast<std::size_t>(stages);

  // Per virtual stage: forward / backward duration and their compute / TP parts.
  st.fwd.assign(n, 0.0);
  st.bwd.assign(n, 0.0);
  st.fwd_tp.assign(n, 0.0);
  st.bwd_tp.assign(n, 0.0);
  st.ep_v.assign(n, 0.0);
  st.fwd_cp.assign(n, 0.0);
  st.bwd_cp.assign(n, 0.0);
  std::vector<double>& fwd = st.fwd;
  std::vector<double>& bwd = st.bwd;
  std::vector<double>& ep_v = st.ep_v;
  double recompute_flops = 0;  // per micro-batch, whole model
  for (int v = 0; v < stages; ++v) {
    double f = 0, ftp = 0, b = 0, btp = 0, fcp = 0, bcp = 0;
    for (int g : sl[v]) {
      double fc, ft, bc, bt, xf, xb;
      group_times(t.groups[g], g, layers, s.recompute, &fc, &ft, &bc, &bt);
      cp_times(t.groups[g], g, layers, s.recompute, &xf, &xb);
      f += fc + ft;
      ftp += ft;
      b += bc + bt;
      btp += bt;
      fcp += xf;
      bcp += xb;
      const GroupCost& gc = t.groups[g];
      ep_v[v] += gc.ep_fwd_s + gc.ep_bwd_s +
                 (s.recompute == Recompute::Full && is_block(g, layers) ? gc.ep_fwd_s : 0.0);
    }
    fwd[v] = f;
    bwd[v] = b;
    st.fwd_tp[v] = ftp;
    st.bwd_tp[v] = btp;
    st.fwd_cp[v] = fcp;
    st.bwd_cp[v] = bcp;
  }
  // ZeRO-2/3: per-micro-batch gradient reduce-scatters and (3) parameter all-gathers of
  // each group, over the dp x cp ranks, left exposed by the group's compute.
  const double grad_bytes = costmodel::dtype_bytes(stack_.grad_reduce_dtype);
  st.fwd_zero.assign(n, 0.0);
  st.bwd_zero.assign(n, 0.0);
  if (s.zero >= 2 && s.dp * s.cp > 1) {
    // Per layer group (the same for every pp / vpp / micro-batch count: cached).
    const bool full = s.recompute == Recompute::Full;
    auto key = std::make_tuple(&t, &pl, s.zero, full);
    auto it = zero_comm_.find(key);
    if (it == zero_comm_.end()) {
      std::vector<costmodel::ZeroGroupComm> per_group(t.groups.size());
      for (std::size_t g = 0; g < t.groups.size(); ++g) {
        const GroupCost& c = t.groups[g];
        per_group[g] = costmodel::zero_group_comm(
            s.zero, c.params_rank, act_bytes_, grad_bytes, c.fwd_s, c.bwd_s,
            full && is_block(static_cast<int>(g), layers), stack_.zero_prefetch, coll_, pl.dp);
      }
      it = zero_comm_.emplace(key, std::move(per_group)).first;
    }
    const std::vector<costmodel::ZeroGroupComm>& zc = it->second;
    for (int v = 0; v < stages; ++v) {
      for (int g : sl[v]) {
        st.fwd_zero[v] += zc[static_cast<std::size_t>(g)].fwd_exposed_s;
        st.bwd_zero[v] += zc[static_cast<std::size_t>(g)].bwd_exposed_s;
      }
      fwd[v] += st.fwd_zero[v];
      bwd[v] += st.bwd_zero[v];
    }
  }
  double model_flops_mb = 0;
  for (std::size_t g = 0; g < t.groups.size(); ++g) {
    const GroupCost& c = t.groups[g];
    model_flops_mb += c.flops_fwd + c.flops_bwd;
    if (s.recompute == Recompute::Full && is_block(static_cast<int>(g), layers))
      recompute_flops += c.flops_fwd;
    else if (s.recompute == Recompute::Selective)
      recompute_flops += c.attn_flops_fwd;
  }
  st.model_flops_mb = model_flops_mb;
  st.recompute_flops = recompute_flops;

  // Pipeline links: p2p of the per-TP-rank slice (+ receiver all-gather without SP).
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
      fwd[v] += st.p2p_fwd[v];
      bwd[v] += st.p2p_bwd[v];
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
  mem_in_.sequence_parallel = s.sequence_parallel;
  mem_in_.attention_score_bytes = score_bytes(stack_);
  mem_in_.grad_buffer_bytes = costmodel::dtype_bytes(stack_.grad_reduce_dtype);
  mem_in_.fp8_weights = fp8_;
  mem_in_.stage_layers = sl;
  // What the pipeline walk's peak_chunks is, known without walking (the search screens
  // memory before it walks).
  mem_in_.in_flight = PipelineWalk::peak_in_flight(s.schedule, s.pp, m, s.vpp, every_step);
  return gr.memory->per_stage(mem_in_);
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

// Why the bound holds: every rank's optimizer step (then its ZeRO-1/2 parameter
// all-gather) starts once the slowest rank is ready, which is no earlier than the end of
// its last compute step (run()); PipelineWalk::compute_end_bound bounds that end from the
// stage times (its comment has the proof, for extended walks too where the compiled
// schedules allow it). So iteration_s >= that bound + the largest optimizer step and gather.
Screening SimEngine::screen(const Strategy& s) {
  require_cp_supported(s);
  const Graph& gr = graph_for(s.micro_batch);
  const Placement& pl = placement_for(s);
  const GroupCostTable& t = costs_for(s, pl);
  const std::vector<std::vector<int>>& sl = partition_for(s, t);
  stage_times(s, pl, t, sl);
  const std::vector<costmodel::StageMemory> mem = memory(s, gr, sl, false);

  Screening out;
  const int pp = s.pp, vpp = s.vpp;
  const int m = static_cast<int>(s.num_microbatches());
  for (int p = 0; p < pp; ++p)  // as run() computes it
    out.peak_memory_gib = std::max(out.peak_memory_gib, mem[static_cast<std::size_t>(p)].total_bytes / kGiB);
  out.fits_memory = out.peak_memory_gib <= cluster_.device.memory_gib;

  const StageTimes& st = times_;
  // The estimate: (a) of PipelineWalk::compute_end_bound with all m micro-batches, for
  // extended walks too (an order, not a bound).
  double chains = 0, before_f = 0, after_b = 0;
  for (int p = 0; p < pp; ++p) {
    double busy = 0;
    for (int c = 0; c < vpp; ++c) busy += m * st.fwd[c * pp + p] + m * st.bwd[c * pp + p];
    chains = std::max(chains, before_f + busy + after_b);
    if (pp > 1) {
      before_f += st.fwd[p] + st.link[p];
      after_b += st.bwd[p] + st.link[p];
    }
  }
  const double bound = walk_->compute_end_bound(s.schedule, pp, m, vpp, st.fwd, st.bwd, st.link);
  const std::vector<double> fp8_w = fp8_weights_per_rank(s, t, sl);
  double after = 0;  // the optimizer step and parameter all-gather of the slowest rank
  for (int p = 0; p < pp; ++p) {
    const costmodel::StageMemory& mp = mem[static_cast<std::size_t>(p)];
    after = std::max(after, optimizer_s(s, mp, fp8_w[static_cast<std::size_t>(p)]) + param_gather_s(s, pl, mp));
  }
  out.estimate_s = chains + after;
  out.lower_bound_s = bound > 0 ? bound + after : 0.0;
  return out;
}

SimulationResult SimEngine::run(const Strategy& s, bool timeline,
                                const std::vector<std::vector<int>>& stage_layers_in) {
  require_cp_supported(s);
  const Graph& gr = graph_for(s.micro_batch);  // whole sequence: parameters and memory
  const Placement& pl = placement_for(s);
  const GroupCostTable& t = costs_for(s, pl);
  const int layers = static_cast<int>(model_.layers);
  const int pp = s.pp, vpp = s.vpp, stages = pp * vpp;
  const int m = static_cast<int>(s.num_microbatches());

  SimulationResult res;
  res.ops = t.ops;
  if (stage_layers_in.empty()) {
    res.stage_layers = partition_for(s, t);
  } else {
    check_stage_layers(stage_layers_in, stages, static_cast<int>(t.groups.size()));
    res.stage_layers = stage_layers_in;
  }
  const auto& sl = res.stage_layers;

  stage_times(s, pl, t, sl);
  const std::vector<double>& fwd = times_.fwd;
  const std::vector<double>& bwd = times_.bwd;
  const std::vector<double>& fwd_tp = times_.fwd_tp;
  const std::vector<double>& bwd_tp = times_.bwd_tp;
  const std::vector<double>& fwd_cp = times_.fwd_cp;
  const std::vector<double>& bwd_cp = times_.bwd_cp;
  const std::vector<double>& ep_v = times_.ep_v;
  const std::vector<double>& fwd_zero = times_.fwd_zero;
  const std::vector<double>& bwd_zero = times_.bwd_zero;
  const std::vector<double>& p2p_fwd = times_.p2p_fwd;
  const std::vector<double>& p2p_bwd = times_.p2p_bwd;
  const std::vector<double>& link = times_.link;
  const double model_flops_mb = times_.model_flops_mb;
  const double recompute_flops = times_.recompute_flops;
  const double grad_bytes = costmodel::dtype_bytes(stack_.grad_reduce_dtype);

  // Pipeline walk (reused when only ZeRO / DP-side settings changed).
  PipelineWalk& w = *walk_;
  if (!w.same_inputs(s.schedule, pp, m, vpp, fwd, bwd, link, timeline))
    w.run(s.schedule, pp, m, vpp, fwd, bwd, link, timeline);

  // Memory per pipeline rank.
  const std::vector<costmodel::StageMemory> mem = memory(s, gr, sl, timeline);

  // DP gradient reduction, per pipeline rank, over the dp x cp ranks (pl.dp).
  const int grad_group = s.dp * s.cp;
  const bool dp_comm = grad_group > 1;
  const Collective grad_coll = s.zero >= 1 ? Collective::ReduceScatter : Collective::AllReduce;
  // Buckets as the stack's DDP forms them; a stack that does not overlap the reduction
  // reduces the whole gradient after the last backward.
  const double stack_bucket = costmodel::grad_bucket_params(stack_, grad_group);
  const bool overlap_dp = stack_.overlap_grad_reduce && stack_bucket > 0;
  const double bucket_cap = overlap_dp ? stack_bucket : std::numeric_limits<double>::infinity();
  // NCCL's kernels hold whole SMs: compute that runs beside a DP collective runs on the
  // rest, so each second of overlap costs `sm_share` seconds of compute (first order;
  // idle gaps of the pipeline inside the overlap are not told apart).
  const double sm_share = dp_comm ? costmodel::comm_sm_share(cluster_, pl.dp) : 0.0;
  std::vector<double> ready(pp), dp_end(pp, 0.0), slowdown(pp, 0.0);
  struct Bucket {
    double ready, params;
    int stage, chunk;
    double expert_params = 0;  // routed-expert part, reduced over the edp group
  };
  std::vector<Bucket> buckets;
  std::vector<TimelineEvent> events;
  const bool tied_sync = model_.tied_embeddings && pp > 1;
  for (int p = 0; p < pp; ++p) {
    double stage_params = 0;
    buckets.clear();
    // ZeRO-2/3 reduced every micro-batch's gradients inside the backward (above).
    if (dp_comm && s.zero <= 1) {
      for (int c = 0; c < vpp; ++c) {
        const int v = c * pp + p;
        const int oi = w.last_backward(p, c);
        STRATA_CHECK(oi >= 0, "no backward for chunk {} on stage {}", c, p);
        const double op_start = w.op_start(oi), op_end = w.op_end(oi);
        // Groups finish in reverse order; durations in proportion to their backward time.
        double at = op_start, acc = 0, acc_expert = 0;
        const double scale = bwd[v] > 0 ? (op_end - op_start) / bwd[v] : 0.0;
        for (auto it = sl[v].rbegin(); it != sl[v].rend(); ++it) {
          double fc, ft, bc, bt;
          group_times(t.groups[*it], *it, layers, s.recompute, &fc, &ft, &bc, &bt);
          at += (bc + bt) * scale;
          acc += t.groups[*it].params_rank;
          acc_expert += t.groups[*it].expert_params_rank;
          stage_params += t.groups[*it].params_rank;
          if (acc >= bucket_cap) {
            buckets.push_back(Bucket{at, acc, p, c, acc_expert});
            acc = 0;
            acc_expert = 0;
          }
        }
        if (acc > 0) buckets.push_back(Bucket{op_end, acc, p, c, acc_expert});
      }
      if (!overlap_dp) {  // one reduction of everything once the stage's backward is done
        double all = 0, all_expert = 0;
        for (const Bucket& b : buckets) all += b.params, all_expert += b.expert_params;
        buckets.assign(1, Bucket{w.compute_end[p], all, p, 0, all_expert});
      }
      // The tied embedding copy on the last stage reduces with the last bucket.
      if (!buckets.empty() && mem[p].params > stage_params)
        buckets.back().params += mem[p].params - stage_params;
      std::stable_sort(buckets.begin(), buckets.end(),
                       [](const Bucket& a, const Bucket& b) { return a.ready < b.ready; });
      // `delay`: compute time lost so far to the SMs of the reductions running beside it;
      // it postpones the later buckets and the end of the backward alike.
      double stream = 0, delay = 0;
      for (std::size_t k = 0; k < buckets.size(); ++k) {
        const double start = std::max(stream, buckets[k].ready + delay);
        const double dense_params = buckets[k].params - buckets[k].expert_params;
        stream = start + coll_.time_s(grad_coll, dense_params * grad_bytes, pl.dp) +
                 coll_.time_s(grad_coll, buckets[k].expert_params * grad_bytes, pl.edp);
        delay += sm_share * std::max(0.0, std::min(stream, w.compute_end[p] + delay) - start);
        if (timeline)
          events.push_back(TimelineEvent{p, "dp_comm",
                                         fmt::format("{} bucket {}",
                                                     s.zero >= 1 ? "reduce-scatter" : "all-reduce", k),
                                         -1, buckets[k].chunk, start, stream});
      }
      dp_end[p] = stream;
      slowdown[p] = delay;
    }
    ready[p] = std::max(w.compute_end[p] + slowdown[p], dp_end[p]);
  }
  if (tied_sync) {
    const double emb_params = static_cast<double>(model_.vocab) * model_.hidden / s.tp;
    const double t_sync = coll_.time_s(Collective::AllReduce, emb_params * grad_bytes, pl.first_last);
    const double start = std::max(ready[0], ready[pp - 1]);
    for (int p : {0, pp - 1}) {
      if (timeline && t_sync > 0)
        events.push_back(TimelineEvent{p, "dp_comm", "embedding grad all-reduce", -1, 0, start,
                                       start + t_sync});
      ready[p] = start + t_sync;
    }
  }
  int q = 0;
  for (int p = 1; p < pp; ++p)
    if (ready[p] > ready[q]) q = p;
  const double sync = ready[q];

  const std::vector<double> fp8_weights_rank = fp8_weights_per_rank(s, t, sl);

  // Optimizer (+ ZeRO-1 parameter all-gather).
  int r = 0;
  double iteration = 0, opt_r = 0, ag_r = 0;
  for (int p = 0; p < pp; ++p) {
    const double opt = optimizer_s(s, mem[p], fp8_weights_rank[static_cast<std::size_t>(p)]);
    const double ag = param_gather_s(s, pl, mem[p]);
    const double end = sync + opt + ag;
    if (timeline) {
      events.push_back(TimelineEvent{p, "optimizer", "adam step", -1, 0, sync, sync + opt});
      if (ag > 0)
        events.push_back(
            TimelineEvent{p, "dp_comm", "param all-gather", -1, 0, sync + opt, end});
    }
    if (end > iteration || p == 0) {
      iteration = end;
      r = p;
      opt_r = opt;
      ag_r = ag;
    }
  }

  Prediction& pr = res.prediction;
  pr.stack = stack_.name;
  pr.precision = costmodel::to_string(stack_.precision);
  {
    const costmodel::PredictionBand& band = band_for(s);
    pr.uncertainty = band.relative.value_or(-1.0);
    pr.uncertainty_low = band.low;
    pr.uncertainty_high = band.high;
    pr.uncertainty_basis = band.basis;
  }
  // Every rank waits for the slowest at the step's synchronisations: the expected maximum
  // of the ranks' jittery step times (costmodel/training_losses.h jitter_cv).
  const double straggler =
      costmodel::straggler_s(iteration, s.gpus(), cluster_.device.training_losses.jitter_cv());
  iteration += straggler;
  pr.iteration_s = iteration;
  const double tokens = static_cast<double>(s.global_batch) * static_cast<double>(model_.seq_len);
  pr.tokens_per_s = iteration > 0 ? tokens / iteration : 0;
  const double mbs_total = static_cast<double>(s.global_batch) / static_cast<double>(s.micro_batch);
  const double gpus = static_cast<double>(s.gpus());
  const double model_flops = model_flops_mb * mbs_total;
  const double hw_flops = (model_flops_mb + recompute_flops) * mbs_total;
  pr.model_tflops_per_gpu = iteration > 0 ? model_flops / iteration / gpus / 1e12 : 0;
  pr.hardware_tflops_per_gpu = iteration > 0 ? hw_flops / iteration / gpus / 1e12 : 0;
  const double peak = cluster_.device.peak_flops(dtype_);
  pr.mfu = peak > 0 ? pr.model_tflops_per_gpu * 1e12 / peak : 0;

  pr.stage_memory_gib.resize(pp);
  pr.peak_memory_gib = 0;
  for (int p = 0; p < pp; ++p) {
    pr.stage_memory_gib[p] = mem[p].total_bytes / kGiB;
    if (pr.stage_memory_gib[p] > pr.peak_memory_gib || p == 0) {
      const costmodel::StageMemory& sm = mem[p];
      pr.peak_memory = MemoryBreakdown{p,
                                       sm.weights_bytes / kGiB,
                                       sm.grads_bytes / kGiB,
                                       sm.optimizer_bytes / kGiB,
                                       sm.activations_bytes / kGiB,
                                       sm.logits_bytes / kGiB,
                                       sm.reserve_bytes / kGiB,
                                       w.peak_chunks.empty() ? 0 : w.peak_chunks[p]};
    }
    pr.peak_memory_gib = std::max(pr.peak_memory_gib, pr.stage_memory_gib[p]);
  }
  pr.fits_memory = pr.peak_memory_gib <= cluster_.device.memory_gib;

  Breakdown& bd = pr.breakdown_s;
  double tp_q = 0, p2p_q = 0, cp_q = 0, zero_q = 0, ep_q = 0;
  for (int c = 0; c < vpp; ++c) {
    zero_q += m * (fwd_zero[c * pp + q] + bwd_zero[c * pp + q]);
    tp_q += m * (fwd_tp[c * pp + q] + bwd_tp[c * pp + q]);
    cp_q += m * (fwd_cp[c * pp + q] + bwd_cp[c * pp + q]);
    p2p_q += m * (p2p_fwd[c * pp + q] + p2p_bwd[c * pp + q]);
    ep_q += m * ep_v[c * pp + q];
  }
  const double busy_q = w.busy_fwd[q] + w.busy_bwd[q];
  bd.ep_comm = ep_q;
  bd.tp_comm = tp_q - ep_q;
  bd.cp_comm = cp_q;
  bd.compute = busy_q - tp_q - p2p_q - cp_q - zero_q;
  const double idle_q = w.idle[q];
  bd.pp_comm = (pp > 1 ? std::min(idle_q, w.chain_p2p(q)) : 0.0) + p2p_q;
  bd.bubble = idle_q - (bd.pp_comm - p2p_q);
  bd.dp_comm = (ready[q] - w.compute_end[q]) + ag_r + zero_q;  // + ZeRO-2/3 in the steps
  bd.optimizer = opt_r;
  bd.straggler = straggler;
  (void)r;
  pr.bubble_fraction = iteration > 0 ? bd.bubble / iteration : 0;

  if (timeline) {
    for (std::size_t i = 0; i < w.num_ops(); ++i) {
      const auto& l = w.label(i);
      events.push_back(TimelineEvent{w.op(i).stage, "compute",
                                     fmt::format("{} m{} c{}", l.forward ? "F" : "B", l.mb, l.chunk),
                                     l.mb, l.chunk, w.op_start(i), w.op_end(i)});
    }
    for (std::size_t i = 0; i < w.num_msgs(); ++i) {
      const auto& mi = w.msg(i);
      const auto src = static_cast<std::size_t>(mi.src_op);
      const auto& l = w.label(src);
      events.push_back(TimelineEvent{w.op(src).stage, "pp_comm",
                                     fmt::format("send {} m{}", mi.activation ? "act" : "grad", l.mb),
                                     l.mb, l.chunk, w.msg_start(i), w.msg_end(i)});
    }
    std::stable_sort(events.begin(), events.end(), [](const TimelineEvent& a, const TimelineEvent& b) {
      return a.stage != b.stage ? a.stage < b.stage : a.start_s < b.start_s;
    });
    res.timeline = std::move(events);
  }
  return res;
}

std::vector<std::string> SimEngine::notes(const Strategy& s) {
  const Placement& pl = placement_for(s);
  const GroupCostTable& t = costs_for(s, pl);
  const auto& dev = cluster_.device;
  auto ref = [](const costmodel::Provenance& p) {
    for (const char* k : {"ref", "url", "tool", "host"}) {
      auto it = p.fields.find(k);
      if (it != p.fields.end()) return it->second;
    }
    return std::string(p.kind.empty() ? "unspecified" : p.kind);
  };
  std::vector<std::string> n;
  n.push_back(fmt::format("stack {} ({}): attention {}, {}, TP overlap {}, DP grad reduce {}, "
                          "pipeline p2p {} (`strata stacks` lists the sources)",
                          stack_.name, stack_.description, costmodel::to_string(stack_.attention),
                          costmodel::to_string(stack_.precision),
                          stack_.overlap_tp_comm ? "userbuffers" : stack_.overlap_tp_backward ? "backward only" : "none",
                          stack_.overlap_grad_reduce ? "overlapped" : "after the backward",
                          costmodel::to_string(stack_.p2p)));
  {
    const costmodel::PredictionBand& band = band_for(s);
    if (band.relative)
      n.push_back(fmt::format("uncertainty: published runs took {:.2f}x to {:.2f}x the predicted step time "
                              "(band includes 1x): {}",
                              band.low, band.high, band.basis));
    for (const auto& w : band.warnings) n.push_back("warning: " + w);
  }
  n.push_back(fmt::format("compute dtype {} on {} ({} peak {:.4g} TFLOP/s: {})",
                          costmodel::to_string(dtype_), dev.name, costmodel::to_string(dtype_),
                          dev.peak_flops(dtype_) / 1e12, ref(dev.source)));
  if (fp8_)
    n.push_back(fmt::format(
        "precision fp8: QKV, attention output and MLP GEMMs at the fp8 rate (peak {:.4g} TFLOP/s; "
        "the profile's fp8 rows, never faster than the bf16 time of the shape x peak ratio), "
        "attention core, LM head and optimizer in {} / fp32 as Transformer Engine under "
        "Megatron-Core runs them; casts to FP8 as memory passes (4 B per cast element), an FP8 "
        "weight copy and its transpose (2 B per weight); MFU is against the {} peak",
        dev.peak_flops(DType::Fp8) / 1e12, costmodel::to_string(dtype_), costmodel::to_string(dtype_)));
  if (t.gemm_measured && !t.gemm_roofline)
    n.push_back(fmt::format("GEMM times: {} table ({})",
                            dev.gemm_source.kind == "published" ? "published" : "measured",
                            ref(dev.gemm_source)));
  else if (t.gemm_measured)
    n.push_back(fmt::format("GEMM times: measured table ({}) where it covers the shape, else "
                            "roofline at {:.0f}% of datasheet peak",
                            ref(dev.gemm_source), dev.gemm_efficiency * 100));
  else
    n.push_back(fmt::format("GEMM times: roofline at {:.0f}% of datasheet peak (no measured table)",
                            dev.gemm_efficiency * 100));
  if (t.blocks_measured)
    n.push_back(fmt::format("transformer blocks: measured block_table ({}: the runtime's whole block, all ranks "
                            "at once{}); per-op times for the embedding, head and loss",
                            ref(dev.block_source),
                            t.tp_blocks_measured ? ", TP communication with a real group" : ""));
  std::set<std::string> measured_ops;
  for (const auto& r : dev.op_table) measured_ops.insert(r.op);
  if (!measured_ops.empty())
    n.push_back(fmt::format("non-GEMM ops {}: measured op_table ({})", fmt::join(measured_ops, ", "),
                            ref(dev.op_source)));
  n.push_back(fmt::format("{}attention at {:.0f}% of peak, elementwise/optimizer at {:.0f}% of "
                          "{:.0f} GB/s ({})",
                          measured_ops.empty() ? "" : "otherwise: ", dev.attention_efficiency * 100,
                          dev.memory_efficiency * 100, dev.memory_bandwidth_gbps,
                          dev.source.measured() || dev.efficiency_source.measured() ? "measured" : "datasheet"));
  auto link_text = [&](const costmodel::LinkSpec& l) {
    std::string t = fmt::format("{:.4g} GB/s", l.bandwidth_gbps);
    if (l.efficiency != 1.0) {
      auto e = l.source.fields.find("efficiency");
      t += fmt::format(" x {:.3g} NCCL efficiency ({})", l.efficiency,
                       e == l.source.fields.end() ? "no source" : e->second);
    }
    return t + ": " + ref(l.source);
  };
  std::string links = "intra-node " + link_text(cluster_.intra_node);
  if (cluster_.nodes > 1) links += "; inter-node " + link_text(cluster_.inter_node);
  n.push_back(fmt::format(
      "collectives: {} ({})",
      (t.tp_measured ||
       coll_.estimate(Collective::AllReduce, 64.0 * 1024 * 1024, pl.dp).source !=
           costmodel::TimeSource::Roofline)
          ? fmt::format("{} table where available ({}), alpha-beta otherwise",
                        dev.collective_source.kind == "published" ? "published" : "measured",
                        ref(dev.collective_source))
          : std::string("alpha-beta model"),
      links));
  if (s.cp > 1)
    n.push_back(fmt::format(
        "context parallel {}: {} K/V exchange on a CP group of {} ranks over {} node(s) "
        "(stack cp_comm_type); attention on 2x{} load-balanced causal chunks; activations and "
        "logits /{}; gradients reduced over dp x cp = {} ranks",
        s.cp, costmodel::to_string(stack_.cp_comm), pl.cp.size, pl.cp.nodes_spanned, s.cp, s.cp,
        s.dp * s.cp));
  if (s.dp * s.cp > 1 && (stack_.overlap_grad_reduce || stack_.overlap_param_gather)) {
    const double share = costmodel::comm_sm_share(cluster_, pl.dp);
    const costmodel::LinkSpec& l = pl.dp.nodes_spanned > 1 ? cluster_.inter_node : cluster_.intra_node;
    if (share > 0)
      n.push_back(fmt::format("overlapped DP collectives hold {} of {} SMs: compute beside them runs "
                              "{:.0f}% slower ({})",
                              l.comm_sms, cluster_.device.sm_count, 100 * share,
                              l.source.fields.count("comm_sms") ? l.source.fields.at("comm_sms") : "no source"));
    else if (cluster_.device.sm_count > 0)
      n.push_back("overlapped DP collectives: their SM use is not charged (the cluster's link gives no "
                  "comm_sms)");
  }
  // The memory model's bytes per parameter before ZeRO sharding (costmodel/memory_model.h).
  const double grad_buffer = costmodel::dtype_bytes(stack_.grad_reduce_dtype);
  const double fp32_copy = costmodel::optimizer_grad_copy_bytes(grad_buffer);
  n.push_back(fmt::format("memory: Korthikanti et al. 2022 activations, {:g} B/param mixed-precision Adam "
                          "(2 weights + {:g} {} gradient buffer{} + 12 fp32 optimizer state), reserve from the "
                          "device profile",
                          14.0 + grad_buffer + fp32_copy, grad_buffer,
                          costmodel::to_string(stack_.grad_reduce_dtype),
                          fp32_copy > 0 ? " + 4 its fp32 copy for the optimizer" : ""));
  return n;
}

}  // namespace detail

SimulationResult simulate(const models::ModelSpec& model, const costmodel::ClusterSpec& cluster,
                          const Strategy& strategy, const SimulateOptions& options) {
  require_valid(strategy, model);
  if (const std::string why = detail::too_large_to_simulate(strategy); !why.empty())
    throw InputError(why);
  if (strategy.gpus() > cluster.total_gpus())
    input_error("strategy uses {} GPUs (dp {} x tp {} x pp {} x cp {}) but cluster {} has {} ({} "
                "nodes x {})",
                strategy.gpus(), strategy.dp, strategy.tp, strategy.pp, strategy.cp, cluster.name,
                cluster.total_gpus(), cluster.nodes, cluster.gpus_per_node);
  detail::SimEngine engine(model, cluster, options.stack, strategy.precision);
  engine.record_ops(options.op_costs);
  SimulationResult r = engine.run(strategy, options.timeline, options.stage_layers);
  r.prediction.notes = engine.notes(strategy);
  return r;
}

}  // namespace strata::planner
