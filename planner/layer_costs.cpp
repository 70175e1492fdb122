// Cost charging, per layer group: what each op of one micro-batch costs on one rank under
// the stack (SimEngine::costs_for, the GroupCostTable the event engine reads), and the
// engine's cost settings (the stack and compute dtype, SimEngine's constructor).
//
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
//  * Context parallel (cp > 1, costmodel/context_parallel_cost.h): every op is timed on
//    the rank's s/cp tokens; the attention core's FLOPs are 1/cp of the whole sequence's
//    (load-balanced causal chunks); the K/V exchange (ring p2p or all-gather, the stack's
//    cp_comm_type) that the attention compute does not hide lengthens forward and
//    backward (and the recomputed forward). Measured block tables (taken without CP) are
//    not used.
//  * MoE: routed experts as grouped GEMMs at the layout's per-expert shape, their token
//    dispatch / combine (costmodel/expert_dispatch_cost.h) and permutes.
//  * Precision: the stack's, or Strategy::precision in its place. fp8
//    (costmodel/fp8_linear.h): the blocks' linear layers and routed-expert GEMMs run as
//    FP8 GEMMs with their cast passes, everything else in bf16; measured block tables (bf16) are not used. A
//    device without an fp8 peak is refused by name.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.h"
#include "costmodel/context_parallel_cost.h"
#include "costmodel/cross_entropy_cost.h"
#include "costmodel/expert_dispatch_cost.h"
#include "costmodel/fp8_linear.h"
#include "costmodel/userbuffers_gemm.h"
#include "planner/detail/group_times.h"
#include "planner/detail/sim_engine.h"
#include "planner/stack_support.h"

namespace strata::planner::detail {

namespace {

using costmodel::Collective;
using costmodel::DType;

// The stack, with `precision` (bf16 | fp16 | fp8; empty: the stack's own) in place of its
// precision.
costmodel::SoftwareStack resolve_stack(const costmodel::SoftwareStack* stack,
                                       const costmodel::DeviceProfile& device,
                                       const std::string& precision) {
  costmodel::SoftwareStack s =
      stack ? *stack : costmodel::load_software_stack(costmodel::default_software_stack_name(device));
  if (!precision.empty()) {
    Strategy asks;  // the stack's own precision decides what it can run (an fp32 stack: fp32 only)
    asks.precision = precision;
    if (const std::string why = stack_refusal(asks, s); !why.empty()) throw InputError(why);
    s.precision = costmodel::dtype_from_string(precision);
  }
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

// Time a collective issued beside `hidden_by` seconds of independent compute leaves
// exposed (ideal overlap: the longer of the two sets the pace).
double exposed(double comm_s, double hidden_by_s) { return std::max(0.0, comm_s - hidden_by_s); }

// Whether blocks a and b of g are the same but for their names and layer numbers.
bool alike_blocks(const models::ModelGraph& g, std::size_t a, std::size_t b) {
  models::LayerGroup x = g.groups()[a];
  const models::LayerGroup& y = g.groups()[b];
  if (x.ops.size() != y.ops.size()) return false;
  for (std::size_t i = 0; i < x.ops.size(); ++i) {
    models::Op p = g.op(x.ops[i]);
    const models::Op& q = g.op(y.ops[i]);
    p.name = q.name;
    p.layer = q.layer;
    if (!(p == q)) return false;
  }
  x.index = y.index;
  x.ops = y.ops;
  return x == y;
}

}  // namespace

std::vector<std::size_t> first_alike_blocks(const models::ModelGraph& g) {
  const int layers = static_cast<int>(g.groups().size()) - 2;
  std::vector<std::size_t> first(g.groups().size());
  std::vector<std::size_t> shapes;  // the first block of each shape
  for (std::size_t gi = 0; gi < first.size(); ++gi) {
    first[gi] = gi;
    if (!is_block(static_cast<int>(gi), layers)) continue;
    const auto it = std::find_if(shapes.begin(), shapes.end(),
                                 [&](std::size_t r) { return alike_blocks(g, r, gi); });
    if (it != shapes.end()) first[gi] = *it;
    else shapes.push_back(gi);
  }
  return first;
}

// What costs_for() charges every op of a strategy with.
struct SimEngine::LayerCostInputs {
  const Strategy& s;
  const Placement& pl;
  const models::ModelGraph& g;      // one rank's s/cp tokens: times
  const models::ModelGraph& whole;  // the whole sequence: parameters
  int tp = 1, cp = 1, layers = 0;
  bool sp = false;
  bool ub = false;  // userbuffers TP overlap (needs SP)
  costmodel::ExpertLayout el;
};

// One op's compute as the stack runs it: the cost model's time, and its GEMMs' forward,
// input-gradient (dgrad) and weight-gradient (wgrad) parts.
struct SimEngine::OpTiming {
  costmodel::OpTime ot;
  costmodel::UserbuffersChunks chunks;
  double gemm_f = 0, dgrad = 0, wgrad = 0;
  bool in_fp8 = false;
};

SimEngine::SimEngine(const models::ModelSpec& model, const costmodel::ClusterSpec& cluster,
                     const costmodel::SoftwareStack* stack, const std::string& precision)
    : model_(model),
      cluster_(cluster),
      stack_(resolve_stack(stack, cluster.device, precision)),
      op_cost_(cluster.device, costmodel::op_cost_options(stack_, cluster.device, model.norm)),
      blocks_(cluster.device.block_table),
      coll_(cluster),
      dtype_(stack_dtype(stack_, cluster.device)),
      fp8_(stack_.precision == DType::Fp8),
      walk_(std::make_unique<PipelineWalk>()) {
  act_bytes_ = costmodel::dtype_bytes(dtype_);
  mem_bytes_per_s_ = cluster.device.memory_bandwidth_gbps * 1e9 * cluster.device.memory_efficiency *
                     cluster.device.training_losses.memory_sustain();
  kernel_overhead_s_ = op_cost_.options().kernel_overhead_s;
}

const GroupCostTable& SimEngine::costs_for(const Strategy& s, const Placement& pl) {
  // A table depends on the strategy through these only: the expert groups enter by their
  // placement (the dispatch's collectives), not by dp, so MoE layouts with other dp but
  // alike-placed ep / etp groups share one (the search screens thousands of them).
  const bool moe = model_.moe.has_value();
  const auto key = std::make_tuple(s.micro_batch, s.tp, s.sequence_parallel, pl.tp.size,
                                   pl.tp.nodes_spanned, pl.tp.ranks_per_node_in_group, s.cp,
                                   pl.cp.nodes_spanned, moe ? s.ep : 0, moe ? s.etp : 0,
                                   moe ? pl.ep : costmodel::PlacedGroup{}, moe ? pl.etp : costmodel::PlacedGroup{});
  auto it = costs_.find(key);
  if (it != costs_.end()) return it->second;

  // With context parallelism every op runs on the rank's s/cp tokens (the local graph);
  // the attention core's queries still meet all s keys: its FLOPs are cp times the local
  // graph's s/cp x s/cp (load-balanced causal chunks give every rank 1/cp of the work).
  const models::ModelGraph& g = *graph_for(s.micro_batch, s.cp).graph;
  LayerCostInputs in{s, pl, g, *graph_for(s.micro_batch).graph, 1, 1, 0, false, false, {}};
  in.tp = s.tp;
  in.cp = s.cp;
  in.sp = s.sequence_parallel;
  in.layers = static_cast<int>(g.groups().size()) - 2;
  in.ub = stack_.overlap_tp_comm && in.sp && in.tp > 1;
  in.el.tp = in.tp, in.el.sequence_parallel = in.sp, in.el.ep = s.ep, in.el.etp = s.etp;
  // A once-per-node dispatcher's sends depend on the nodes the ep group spans (its placement
  // is in the table's key); the per-copy all-to-all needs no routing model.
  if (moe && stack_.moe_once_per_node()) {
    in.el.once_per_node = true;
    in.el.ep_nodes = pl.ep.nodes_spanned;
  }
  // The allgather dispatcher's group is etp x ep contiguous ranks: its placement follows from
  // ep and etp, which the table's key holds.
  if (moe && stack_.moe_dispatcher == costmodel::MoeDispatcher::AllGather) {
    in.el.all_gather = true;
    in.el.tp_ep = pl.tp_ep;
  }
  if (moe) in.el.tokens_factor = costmodel::expert_tokens_factor(*model_.moe);
  GroupCostTable t;
  t.groups.resize(g.groups().size());
  const std::string signature = blocks_.empty() ? std::string() : costmodel::block_signature(g.spec());
  // A block alike an earlier one in both graphs takes its costs instead of being charged op
  // by op again (the first block, whose ops record_ops keeps, is always charged).
  const std::vector<std::size_t>& alike = graph_for(s.micro_batch, s.cp).first_alike;
  const std::vector<std::size_t>& alike_whole = graph_for(s.micro_batch).first_alike;
  for (std::size_t gi = 0; gi < g.groups().size(); ++gi) {
    if (alike[gi] != gi && alike_whole[gi] == alike[gi]) {
      t.groups[gi] = t.groups[alike[gi]];
      continue;
    }
    const models::LayerGroup& lg = g.groups()[gi];
    GroupCost& c = t.groups[gi];
    c.flops_fwd = lg.flops_fwd;
    c.flops_bwd = lg.flops_bwd;
    c.flops_fwd *= in.cp;
    c.flops_bwd *= in.cp;
    for (std::size_t v : lg.ops) charge_op(in, gi, v, t);
    apply_measured_block(in, gi, signature, t);
  }
  return costs_.emplace(key, std::move(t)).first->second;
}

SimEngine::OpTiming SimEngine::op_timing(const LayerCostInputs& in, const models::Op& op) const {
  OpTiming x;
  // Routed experts: a grouped GEMM at the per-expert shape of this layout, the token
  // exchange around them, and the permutes (memory passes) on the compute stream; under
  // an FP8 recipe each expert GEMM at the FP8 rate plus its casts (costmodel/fp8_linear.h).
  x.in_fp8 = fp8_ && costmodel::runs_in_fp8(op.kind);
  x.ot = op.routed_expert ? expert_time(in, op, x.in_fp8)
                          : op_cost_.time(op, in.tp, in.sp, x.in_fp8 ? DType::Fp8 : dtype_);
  // The op's GEMMs as the stack runs them: forward, and the backward's input-gradient
  // (dgrad) and weight-gradient (wgrad) halves; userbuffers cut some into chunks
  // (costmodel/userbuffers_gemm.h), which the collectives below are pipelined with.
  x.chunks = in.ub && models::is_gemm(op.kind) ? costmodel::userbuffers_chunks(op, in.tp)
                                               : costmodel::UserbuffersChunks{};
  x.gemm_f = models::is_gemm(op.kind) ? x.ot.fwd_s : 0.0;
  x.dgrad = models::is_gemm(op.kind) ? x.ot.bwd_s / 2 : 0.0;
  x.wgrad = x.dgrad;  // equal FLOPs
  if (x.chunks.fwd > 1 || x.chunks.dgrad > 1) {
    const models::GemmShape gs = costmodel::sharded_gemm(op, in.tp, in.sp);
    const DType gd = x.in_fp8 ? DType::Fp8 : dtype_;
    const auto unchunked = costmodel::chunked_gemm_time(op_cost_.gemm(), gs.m, gs.n, gs.k, {}, gd);
    const auto parts = costmodel::chunked_gemm_time(op_cost_.gemm(), gs.m, gs.n, gs.k, x.chunks, gd);
    const double count = static_cast<double>(op.gemm_count);
    x.ot.fwd_s += count * (parts.fwd_s - unchunked.fwd_s);
    x.ot.bwd_s += count * (parts.dgrad_s - unchunked.dgrad_s);
    x.gemm_f = x.ot.fwd_s;
    x.dgrad = count * parts.dgrad_s;
    x.wgrad = count * parts.wgrad_s;
  }
  return x;
}

// A routed-expert grouped GEMM: one GEMM per local expert at its per-rank shape
// (costmodel/expert_dispatch_cost.h) and, under an FP8 recipe, the casts of every expert's
// input and output gradient as memory passes (costmodel/fp8_linear.h), launched once for
// the group (assumption: Transformer Engine's GroupedLinear casts its inputs together).
costmodel::OpTime SimEngine::expert_time(const LayerCostInputs& in, const models::Op& op, bool fp8) const {
  costmodel::OpTime t = costmodel::expert_gemm_time(op_cost_.gemm(), op, in.el, fp8 ? DType::Fp8 : dtype_);
  if (!fp8 || mem_bytes_per_s_ <= 0) return t;
  const costmodel::ExpertGemmShape s = costmodel::expert_gemm_shape(op, in.el);
  const costmodel::Fp8CastWork w = costmodel::fp8_activation_casts(s.m, s.n, s.k);
  const double count = static_cast<double>(s.count);
  t.fwd_s += count * w.fwd_bytes / mem_bytes_per_s_ + w.fwd_kernels * kernel_overhead_s_;
  t.bwd_s += count * w.bwd_bytes / mem_bytes_per_s_ + w.bwd_kernels * kernel_overhead_s_;
  return t;
}

// The module of a block `op` belongs to, for selective recompute by module (Megatron-Core
// recompute_modules: layernorm = the two block norms; mla_up_proj = the MLA up projections,
// their latent norms and RoPE; mlp = the dense MLP; moe = the whole MoE MLP, its permutes
// and token exchange; moe_act = the routed experts' activation; shared_experts).
void SimEngine::charge_recompute_modules(const models::Op& op, const costmodel::OpTime& ot,
                                         const LayerCostInputs& in, GroupCost& c) const {
  const double fwd_s = ot.fwd_s;
  const std::string_view name = op.name;
  const auto dot = name.rfind('.');
  const std::string_view local = dot == std::string_view::npos ? name : name.substr(dot + 1);
  const auto add = [&](GroupCost::ModuleCost& m) {
    m.fwd_s += fwd_s;
    m.flops_fwd += op.flops_fwd * in.cp;
  };
  if (op.kind == models::OpKind::Norm && (local == "norm1" || local == "norm2")) add(c.norm);
  if (model_.mla && (local == "q_up" || local == "kv_up" || local == "q_norm" || local == "kv_norm" || local == "rope"))
    add(c.mla_up);
  if (local.starts_with("mlp_")) add(c.dense_mlp);
  const bool shared = local.starts_with("shared_");
  if (op.routed_expert || op.kind == models::OpKind::Router || shared || local == "expert_activation") {
    add(c.moe);  // its token exchange and permutes: charge_op
  }
  if (local == "expert_activation") add(c.moe_act);
  if (shared) add(c.shared_experts), c.shared_experts_bwd_s += ot.bwd_s;
  // per_op: everything but the kept mm outputs (wq, wv, w1, w2) and the attention kernel;
  // of the fused QKV GEMM, the K part (wk) re-runs. Collectives are not re-run (the
  // policy keeps the reduce-scatter outputs; the SP all-gather before QKV is left out).
  const auto add_share = [&](GroupCost::ModuleCost& m, double share) {
    m.fwd_s += share * fwd_s;
    m.flops_fwd += share * op.flops_fwd * in.cp;
  };
  if (op.kind == models::OpKind::Norm || op.kind == models::OpKind::Rope || op.kind == models::OpKind::Residual ||
      local == "mlp_activation" || local == "out_proj" || local == "mlp_up")
    add(c.per_op);
  if (local == "qkv") {
    const double q = static_cast<double>(model_.q_dim());
    const double kv = model_.kv_heads > 0 ? static_cast<double>(model_.kv_dim()) : q;
    add_share(c.per_op, kv / (q + 2.0 * kv));
  }
}

void SimEngine::charge_op(const LayerCostInputs& in, std::size_t gi, std::size_t v, GroupCostTable& t) const {
  GroupCost& c = t.groups[gi];
  const int tp = in.tp, cp = in.cp;
  models::Op op = in.g.op(v);
  if (cp > 1 && op.kind == models::OpKind::AttentionCore) {
    c.flops_fwd += (cp - 1) * op.flops_fwd * cp;  // the group's FLOPs: whole sequence
    c.flops_bwd += (cp - 1) * op.flops_bwd * cp;
    op.flops_fwd *= cp;
    op.flops_bwd *= cp;
  }
  const OpTiming x = op_timing(in, op);
  const costmodel::OpTime& ot = x.ot;
  if (op.ep_comm != models::EpComm::None) {
    const costmodel::DispatchTime dt = costmodel::dispatch_time(coll_, op, in.el, in.pl.ep, in.pl.etp, act_bytes_,
                                                                 model_.moe ? &*model_.moe : nullptr);
    c.ep_fwd_s += dt.fwd_s;
    c.ep_bwd_s += dt.bwd_s;
    c.moe_ep_fwd_s += dt.fwd_s;  // re-run when the MoE module is recomputed
    const bool dispatch = op.ep_comm == models::EpComm::DispatchForwardCombineBackward;
    if (dispatch) {
      // The dispatch's backward is the all-to-all that returns the tokens' gradients.
      c.ep_dispatch_fwd_s += dt.fwd_s;
      c.ep_dispatch_bwd_s += dt.bwd_s;
    }
    const double permute = dt.permute_bytes;
    if (mem_bytes_per_s_ > 0) {
      const double permute_s = permute / mem_bytes_per_s_ + kernel_overhead_s_;
      c.fwd_s += permute_s;
      c.bwd_s += permute_s;
      c.moe.fwd_s += permute_s;
      // The dispatch's permute is Megatron's dispatch preprocess (before the exchange); the
      // combine's is the experts' node's combine preprocess.
      if (!dispatch) c.experts_fwd_s += permute_s, c.experts_bwd_s += permute_s;
    }
  }
  c.fwd_s += ot.fwd_s;
  c.bwd_s += ot.bwd_s;
  {
    const bool experts_node = op.routed_expert || op.name.ends_with("expert_activation");
    if (experts_node) c.experts_fwd_s += ot.fwd_s, c.experts_bwd_s += ot.bwd_s;
    // A GEMM's backward is two GEMMs of its forward's size: the input gradient and the weight
    // gradient, half each.
    if (models::is_gemm(op.kind)) (op.routed_expert ? c.experts_wgrad_s : c.block_wgrad_s) += 0.5 * ot.bwd_s;
  }
  if (models::is_gemm(op.kind)) {
    if (ot.source == costmodel::TimeSource::Roofline) t.gemm_roofline = true;
    else t.gemm_measured = true;
  }
  charge_recompute_modules(op, ot, in, c);
  if (op.kind == models::OpKind::AttentionCore) {
    c.attn_fwd_s += ot.fwd_s;
    c.attn_flops_fwd += op.flops_fwd * cp;
    if (cp > 1) {
      // A stack that repeats the K/V heads before the attention kernel (GQA's repeat_kv in
      // the model code, attention.layout_copies) hands the kernel, and so the K/V exchange,
      // every query head.
      const double kv_width = static_cast<double>(stack_.attention_layout_copies ? model_.q_dim() : model_.kv_dim());
      const double kv = costmodel::cp_kv_bytes_per_rank(static_cast<double>(in.s.micro_batch),
                                                        static_cast<double>(model_.seq_len), kv_width, tp, cp,
                                                        act_bytes_);
      const costmodel::CpAttentionComm e = costmodel::cp_attention_comm(
          stack_.cp_comm, cp, kv, ot.fwd_s, ot.bwd_s, coll_, in.pl.cp);
      c.cp_fwd_s += e.fwd_exposed_s;
      c.cp_bwd_s += e.bwd_exposed_s;
    }
  }
  // Parameters do not depend on the sequence split: count them on the whole graph
  // (learned position embeddings have s rows).
  const models::Op& whole_op = in.whole.op(v);
  const double op_params_rank =
      whole_op.routed_expert ? whole_op.params / (static_cast<double>(in.s.ep) * in.s.etp)
      : whole_op.sharding == models::Sharding::Replicated ? whole_op.params
                                                            : whole_op.params / tp;
  c.params_rank += op_params_rank;
  if (op.routed_expert) c.expert_params_rank += op_params_rank;
  if (stack_.zero3_gather == costmodel::Zero3Gather::Module && op_params_rank > 0) {
    // One module per op, one per local expert for routed experts (each expert is its own
    // nn.Module); persisted modules keep their parameters whole and are never gathered.
    const double modules = whole_op.routed_expert
                               ? std::max(1.0, static_cast<double>(whole_op.gemm_count) / in.s.ep)
                               : 1.0;
    const double unit = op_params_rank / modules;
    std::vector<double>& units = whole_op.routed_expert ? c.zero3_expert_units : c.zero3_dense_units;
    if (unit > stack_.zero3_persist_params) units.insert(units.end(), static_cast<std::size_t>(modules), unit);
  }
  if (x.in_fp8)
    c.fp8_weights_rank += costmodel::fp8_weights(whole_op) /
                          (whole_op.routed_expert ? static_cast<double>(in.s.ep) * in.s.etp : tp);
  const double grad_acc_s = grad_accumulation_s(op, op_params_rank);
  if (op_params_rank > 0 && mem_bytes_per_s_ > 0) c.bwd_s += grad_acc_s;
  if (record_ops_ && (gi == 1 || static_cast<int>(gi) == in.layers + 1)) {
    t.ops.push_back(op_cost_row(op, static_cast<int>(gi), ot, tp, in.sp, in.el, x.in_fp8 ? DType::Fp8 : dtype_,
                                stack_.flash_like()));
    t.ops.back().bwd_s += grad_acc_s;  // into the main gradient, as charged above
    if (op.kind == models::OpKind::Loss && op.logits > 0)  // the cross-entropy passes it charged
      t.ops.back().bytes_fwd =
          op.logits / tp *
          costmodel::cross_entropy_work(stack_.fused_cross_entropy, std::max<double>(2, act_bytes_))
              .fwd_bytes_per_logit;
  }
  if (tp == 1 || op.tp_comm == models::TpComm::None) return;
  charge_tp_comm(in, op, x, t.groups[gi], t);
}

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
double SimEngine::grad_accumulation_s(const models::Op& op, double op_params_rank) const {
  if (!(op_params_rank > 0 && mem_bytes_per_s_ > 0)) return 0;
  const double main_bytes = costmodel::dtype_bytes(stack_.grad_reduce_dtype);
  if (stack_.fused_grad_accumulation && models::is_gemm(op.kind))
    return op_params_rank * std::max(0.0, 2.0 * main_bytes - act_bytes_) / mem_bytes_per_s_;
  return op_params_rank * (2.0 * main_bytes + act_bytes_) / mem_bytes_per_s_ + kernel_overhead_s_;
}

void SimEngine::charge_tp_comm(const LayerCostInputs& in, const models::Op& op, const OpTiming& x,
                               GroupCost& c, GroupCostTable& t) const {
  const bool sp = in.sp, ub = in.ub;
  auto coll = [&](Collective k, double bytes) {
    const auto e = coll_.estimate(k, bytes, in.pl.tp);
    if (e.source != costmodel::TimeSource::Roofline) t.tp_measured = true;
    return e.time_s;
  };
  // tp_comm_bytes assume 2-byte activations; the loss' reductions are fp32 already.
  const double bytes = op.kind == models::OpKind::Loss ? op.tp_comm_bytes
                                                       : op.tp_comm_bytes * act_bytes_ / 2.0;
  // The all-gathers feeding an FP8 GEMM move its FP8 cast where the stack gathers after the
  // cast (SoftwareStack::fp8_tp_all_gather); the reduce-scatters carry 16-bit GEMM outputs.
  const double ag_bytes =
      x.in_fp8 && stack_.fp8_tp_all_gather ? bytes / act_bytes_ * costmodel::dtype_bytes(DType::Fp8) : bytes;
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
  const double gemm_f = x.gemm_f, dgrad = x.dgrad, wgrad = x.wgrad;
  // Batch-first sequence-parallel collectives re-lay out the whole tensor on the compute stream
  // (SoftwareStack::sp_collective_copies): a copy reading and writing it before each
  // reduce-scatter and after each all-gather. A gathered micro-batch of one sequence is a view
  // of NCCL's dim-0 result (PyTorch's _maybe_view_chunk_cat), so its gathers copy nothing.
  // The column-parallel backward's weight gradient needs the gathered input: gathered again
  // unless autograd kept it (SoftwareStack::sp_backward_regather) and no per-op recompute
  // dropped it. Under full recompute the re-run forward's gather (tp_fwd_s, charged again by
  // group_times) serves it.
  const bool regather =
      stack_.sp_backward_regather || (in.s.recompute == Recompute::Selective && in.s.recompute_modules.per_op);
  const bool copies = sp && stack_.sp_collective_copies && mem_bytes_per_s_ > 0;
  const double rs_copy_s = copies ? 2.0 * bytes / mem_bytes_per_s_ + kernel_overhead_s_ : 0.0;
  const double ag_copy_s =
      copies && in.s.micro_batch > 1 ? 2.0 * ag_bytes / mem_bytes_per_s_ + kernel_overhead_s_ : 0.0;
  switch (op.tp_comm) {
    case models::TpComm::CopyForwardAllReduceBackward:
    case models::TpComm::AllGatherForwardReduceScatterBackward:
      // Column-parallel input. Backward: the input gradient's all-reduce (no SP) or
      // reduce-scatter (SP) can run beside the wgrad GEMM; with SP the layer kept only
      // its sequence shard, so the all-gather is re-done before the GEMMs.
      if (sp) {
        const double ag = coll(Collective::AllGather, ag_bytes);
        const double rs = coll(Collective::ReduceScatter, bytes);
        c.tp_fwd_s += ub ? costmodel::ring_exchange_exposed(ag, gemm_f, x.chunks.fwd) : ag;  // copy engines
        if (regather) c.tp_bwd_s += (async_bwd || ub) ? exposed(ag, dgrad) : ag;
        c.tp_bwd_s += (async_bwd || ub) ? exposed(rs, wgrad) : rs;
        c.tp_bwd_s += (regather ? ub_slowdown(ag, dgrad) : 0.0) + ub_slowdown(rs, wgrad);  // bulk
        c.fwd_s += ag_copy_s;
        c.bwd_s += (regather ? ag_copy_s : 0.0) + rs_copy_s;
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
        const double ag = coll(Collective::AllGather, ag_bytes);
        c.tp_fwd_s += ub ? costmodel::pipeline_exposed(rs, gemm_f, x.chunks.fwd) : rs;
        c.tp_fwd_s += ub_slowdown(rs, gemm_f);  // pipeline
        c.tp_bwd_s += ub ? costmodel::ring_exchange_exposed(ag, dgrad, x.chunks.dgrad) : ag;  // copy engines
        c.fwd_s += rs_copy_s;
        c.bwd_s += ag_copy_s;
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
void SimEngine::apply_measured_block(const LayerCostInputs& in, std::size_t gi, const std::string& signature,
                                     GroupCostTable& t) const {
  if (blocks_.empty() || in.cp != 1 || fp8_ || !is_block(static_cast<int>(gi), in.layers)) return;
  auto e = blocks_.estimate(signature, in.tp, in.sp, in.s.micro_batch);
  if (!e) return;
  GroupCost& c = t.groups[gi];
  // A measured block faster than the device's peak on its model FLOPs is a broken row
  // (mistyped units, another model's block), not a fast device: refuse it by name.
  if (auto peak = cluster_.device.peak_tflops.find(dtype_); peak != cluster_.device.peak_tflops.end()) {
    const double per_rank = (c.flops_fwd + c.flops_bwd) / in.tp;
    const double tflops = per_rank / (e->fwd_s + e->bwd_s) / 1e12;
    if (tflops > peak->second)
      input_error("device '{}' block_table: block \"{}\" (tp {}, micro_batch {}) runs {:.4g} model TFLOP/s "
                  "per rank, above the device's {} peak of {:.4g} TFLOP/s: the row's times are too small",
                  cluster_.device.name, signature, in.tp, in.s.micro_batch, tflops,
                  costmodel::to_string(dtype_), peak->second);
  }
  c.fwd_s = e->fwd_s;
  c.bwd_s = e->bwd_s;
  t.blocks_measured = true;
  // Measured with a real group inside one node: the block's TP collectives as the
  // runtime meets them replace the per-collective table for groups placed alike.
  if (e->has_tp && in.pl.tp.size == in.tp && in.pl.tp.nodes_spanned == 1) {
    c.tp_fwd_s = e->tp_fwd_s;
    c.tp_bwd_s = e->tp_bwd_s;
    t.tp_blocks_measured = true;
  }
}

}  // namespace strata::planner::detail
