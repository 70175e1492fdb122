#include "costmodel/memory_model.h"

#include <algorithm>
#include <cmath>

#include "common/enum_names.h"
#include "common/errors.h"
#include "costmodel/fp8_linear.h"

namespace strata::costmodel {

constexpr EnumName<RecomputeMode> kRecomputeModeNames[] = {
    {RecomputeMode::None, "none"}, {RecomputeMode::Selective, "selective"}, {RecomputeMode::Full, "full"}};

const char* to_string(RecomputeMode r) { return enum_name(r, kRecomputeModeNames); }

RecomputeMode recompute_from_string(const std::string& s) {
  if (const auto r = enum_from_name(s, kRecomputeModeNames)) return *r;
  input_error("unknown recompute mode '{}' (expected one of: {})", s, enum_names(kRecomputeModeNames));
}

namespace {

void check_activation_args(std::int64_t micro_batch, int tp, int etp, double score_bytes) {
  if (etp < 1) input_error("etp ({}) must be >= 1", etp);
  if (!(score_bytes >= 0)) input_error("attention score bytes ({}) must be >= 0", score_bytes);
  if (micro_batch < 1) input_error("micro_batch ({}) must be >= 1", micro_batch);
  if (tp < 1) input_error("tp ({}) must be >= 1", tp);
}

// The modules selective recompute drops: the caller's list, or strata's selective mode
// (core_attn) when none is given.
RecomputeModules dropped_modules(RecomputeMode recompute, const RecomputeModules& modules) {
  if (recompute != RecomputeMode::Selective) return {};
  if (modules.any()) return modules;
  RecomputeModules core;
  core.core_attn = true;
  return core;
}

double mlp_bytes_per_f(const models::ModelSpec& spec, const ActivationStorage& storage) {
  // GELU: its input and output (2f each); SwiGLU: gate, up and their product. The output is
  // fc2's input: its FP8 cast (1 byte) under the FP8 recipe.
  return (spec.activation == models::Activation::SwiGlu ? 6.0 : 4.0) - (storage.fp8_gemm_inputs ? 1.0 : 0.0);
}

// Bytes per element of a GEMM input kept for the weight gradient.
double gemm_input_bytes(const ActivationStorage& storage) { return storage.fp8_gemm_inputs ? 1.0 : 2.0; }

}  // namespace

double routed_activation_bytes(const models::ModelSpec& spec, std::int64_t micro_batch, int tp,
                               RecomputeMode recompute, std::int64_t layer, int etp,
                               const RecomputeModules& modules, const ActivationStorage& storage) {
  check_activation_args(micro_batch, tp, etp, 0.0);
  if (recompute == RecomputeMode::Full || layer <= 0 || !spec.is_moe_layer(layer)) return 0.0;
  const RecomputeModules drop = dropped_modules(recompute, modules);
  if (drop.moe) return 0.0;
  const models::MoeSpec& e = *spec.moe;
  const double s = static_cast<double>(spec.seq_len), b = static_cast<double>(micro_batch);
  const double h = static_cast<double>(spec.hidden);
  const double factor = e.capacity_factor > 0 ? e.capacity_factor : e.load_imbalance;
  // moe_act discards the activation's output (the down projection's input; under FP8
  // Megatron-Core has fc2 save that original instead of its cast: megatron/core/transformer/
  // moe/experts.py set_save_original_input, 781e765818).
  const double per_f = mlp_bytes_per_f(spec, storage) - (drop.moe_act ? gemm_input_bytes(storage) : 0.0);
  // Per copy: the experts' fc1 input, and the experts' output the combine weights by the
  // routing probabilities unless the activation already did.
  const double per_h = gemm_input_bytes(storage) + (storage.moe_probs_in_activation ? 0.0 : 2.0);
  return s * b / tp *
         (4.0 * static_cast<double>(e.experts) +
          static_cast<double>(e.top_k) * factor * (per_h * h + per_f * static_cast<double>(e.expert_ffn) / etp));
}

double layer_activation_bytes(const models::ModelSpec& spec, std::int64_t micro_batch, int tp,
                              bool sequence_parallel, RecomputeMode recompute,
                              double score_bytes, std::int64_t layer, int etp, const RecomputeModules& modules,
                              const ActivationStorage& storage) {
  check_activation_args(micro_batch, tp, etp, score_bytes);
  const double s = static_cast<double>(spec.seq_len);
  const double b = static_cast<double>(micro_batch);
  const double h = static_cast<double>(spec.hidden);
  const double a = static_cast<double>(spec.heads);
  const double f = static_cast<double>(spec.ffn);
  const double kv_heads = static_cast<double>(spec.kv_heads > 0 ? spec.kv_heads : spec.heads);
  const double kv = kv_heads * (h / a);  // K and V width
  const double t = tp;
  const double sbh = s * b * h;

  if (recompute == RecomputeMode::Full) return 2.0 * sbh / (sequence_parallel ? t : 1.0);
  const RecomputeModules drop = dropped_modules(recompute, modules);
  if (drop.per_op) {
    // TorchTitan's per-op policy (recompute_modules.h) keeps, 2 bytes each: the block input
    // and the w2 output (h wide, sequence-sharded with SP), the wq, wv and w1 outputs and the
    // attention output (tp-sharded), and the attention kernel's fp32 log-sum-exp per head.
    const double q = static_cast<double>(spec.q_dim()), kvd = spec.explicit_head_dim != 0 && spec.kv_heads > 0 ? static_cast<double>(spec.kv_dim()) : kv;
    const double kept_replicated = 4.0 * sbh;
    const double kept_sharded = s * b * (2.0 * q + 2.0 * kvd + 2.0 * q + 4.0 * a + 2.0 * f);
    return sequence_parallel ? (kept_replicated + kept_sharded) / t : kept_replicated + kept_sharded / t;
  }

  const bool moe_layer = layer > 0 && spec.is_moe_layer(layer);
  // Both norms' inputs (4sbh) and the two dropout masks (2sbh); the norms' outputs as the QKV
  // and MLP GEMMs keep them (FP8: their casts), unless layernorm recompute discards them
  // (under FP8 Megatron-Core then has those GEMMs save the discarded original: 781e765818).
  // An MoE layer's MLP input is the router's 16-bit input; shared experts keep their own cast.
  double replicated = 6.0 * sbh;
  double gathered = 0;  // whole on every TP rank even with SP (storage.gathered_gemm_inputs)
  double& gemm_inputs = sequence_parallel && storage.gathered_gemm_inputs ? gathered : replicated;
  if (!drop.layernorm) {
    gemm_inputs += gemm_input_bytes(storage) * sbh;
    if (!moe_layer) {
      gemm_inputs += gemm_input_bytes(storage) * sbh;
    } else {
      const bool shared_kept = spec.moe->shared_experts > 0 && !drop.moe && !drop.shared_experts;
      replicated += (2.0 + (storage.fp8_gemm_inputs && shared_kept ? 1.0 : 0.0)) * sbh;
    }
  }
  // Q, K (2sb(h + kv)), V (2sb kv), out-proj input (2sbh): 8sbh for full multi-head attention.
  double attention_linear = 2.0 * s * b * (h + kv) + 2.0 * s * b * kv + 2.0 * sbh;
  if (spec.explicit_head_dim != 0 && !spec.mla) {
    const double q = static_cast<double>(spec.q_dim()), kvd = static_cast<double>(spec.kv_dim());
    attention_linear = 2.0 * s * b * (q + kvd) + 2.0 * s * b * kvd + 2.0 * s * b * q;
  }
  // Q and K norms per head (model.qk_norm) keep their inputs, the QKV projection's Q and K.
  if (spec.qk_norm && !spec.mla)
    attention_linear += 2.0 * s * b * static_cast<double>(spec.q_dim() + spec.kv_dim());
  if (spec.mla) {
    const models::MlaSpec& m = *spec.mla;
    const double qk = a * static_cast<double>(m.qk_head_dim()), v = a * static_cast<double>(m.v_head_dim);
    // Q, K, V (dropped by mla_up_proj); the out-proj input.
    attention_linear = (drop.mla_up_proj ? 0.0 : 2.0 * s * b * (2 * qk + v)) + 2.0 * s * b * v;
    replicated += 2.0 * s * b * static_cast<double>(m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim);
  }
  const double per_f = mlp_bytes_per_f(spec, storage);
  double mlp = drop.mlp ? 0.0 : per_f * s * b * f;
  double routed = 0;  // per rank, already sharded
  if (moe_layer) {
    const models::MoeSpec& e = *spec.moe;
    mlp = drop.moe || drop.shared_experts
              ? 0.0
              : per_f * s * b * static_cast<double>(e.shared_experts * e.shared_expert_ffn);
    routed = routed_activation_bytes(spec, micro_batch, tp, recompute, layer, etp, modules, storage);
  }
  const double scores = drop.core_attn ? 0.0 : score_bytes * a * s * s * b;
  const double sharded = attention_linear + mlp + scores;
  return (sequence_parallel ? (replicated + sharded) / t : replicated + sharded / t) + gathered + routed;
}

MemoryModel::MemoryModel(const models::ModelGraph& graph, const DeviceProfile& device)
    : spec_(graph.spec()), reserve_bytes_(device.reserve_gib * 1024.0 * 1024.0 * 1024.0) {
  const auto& groups = graph.groups();
  group_params_sharded_.assign(groups.size(), 0.0);
  group_params_replicated_.assign(groups.size(), 0.0);
  group_params_shared_.assign(groups.size(), 0.0);
  group_params_expert_.assign(groups.size(), 0.0);
  group_fp8_weights_.assign(groups.size(), 0.0);
  group_fp8_expert_weights_.assign(groups.size(), 0.0);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::size_t v : groups[g].ops) {
      const models::Op& op = graph.op(v);
      if (op.routed_expert) group_params_expert_[g] += op.params;
      else if (op.sharding == models::Sharding::Replicated) group_params_replicated_[g] += op.params;
      else group_params_sharded_[g] += op.params;
      group_params_shared_[g] += op.shared_params;
      // all column / row parallel: / tp below; routed experts / (ep x etp)
      (op.routed_expert ? group_fp8_expert_weights_ : group_fp8_weights_)[g] += fp8_weights(op);
    }
  }
}

namespace {

void check_inputs(const MemoryInputs& in, int num_groups) {
  if (in.tp < 1) input_error("memory model tp ({}) must be >= 1", in.tp);
  if (in.pp < 1) input_error("memory model pp ({}) must be >= 1", in.pp);
  if (in.dp < 1) input_error("memory model dp ({}) must be >= 1", in.dp);
  if (in.vpp < 1) input_error("memory model vpp ({}) must be >= 1", in.vpp);
  if (in.cp < 1) input_error("memory model cp ({}) must be >= 1", in.cp);
  if (in.micro_batch < 1) input_error("memory model micro_batch ({}) must be >= 1", in.micro_batch);
  if (in.head_in_flight < 0) input_error("memory model head_in_flight ({}) must be >= 0", in.head_in_flight);
  if (!(in.loss_bytes_per_logit > 0))
    input_error("memory model loss_bytes_per_logit ({}) must be > 0", in.loss_bytes_per_logit);
  if (in.num_microbatches < 0)
    input_error("memory model num_microbatches ({}) must be >= 0", in.num_microbatches);
  if (in.zero < 0 || in.zero > 3) input_error("memory model zero ({}) must be 0, 1, 2 or 3", in.zero);
  if (in.ep < 1 || in.etp < 1 ||
      (static_cast<long long>(in.tp) * in.cp * in.dp) % (static_cast<long long>(in.ep) * in.etp) != 0)
    input_error("memory model ep ({}) x etp ({}) must divide tp x cp x dp ({} x {} x {})", in.ep, in.etp, in.tp,
                in.cp, in.dp);
  const std::size_t chunks = static_cast<std::size_t>(in.pp) * static_cast<std::size_t>(in.vpp);
  if (!in.stage_layers.empty()) {
    if (in.stage_layers.size() != chunks)
      input_error("memory model stage_layers has {} entries, expected pp*vpp = {}",
                  in.stage_layers.size(), chunks);
    std::vector<int> seen(static_cast<std::size_t>(num_groups), 0);
    for (std::size_t c = 0; c < chunks; ++c)
      for (int g : in.stage_layers[c]) {
        if (g < 0 || g >= num_groups)
          input_error("memory model stage_layers[{}] names layer group {}, expected 0 .. {}", c, g,
                      num_groups - 1);
        if (seen[static_cast<std::size_t>(g)]++)
          input_error("memory model stage_layers assigns layer group {} twice", g);
      }
    for (int g = 0; g < num_groups; ++g)
      if (!seen[static_cast<std::size_t>(g)])
        input_error("memory model stage_layers leaves layer group {} unassigned", g);
  }
  if (!in.in_flight.empty()) {
    if (in.in_flight.size() != static_cast<std::size_t>(in.pp))
      input_error("memory model in_flight has {} entries, expected pp = {}", in.in_flight.size(),
                  in.pp);
    for (std::size_t p = 0; p < in.in_flight.size(); ++p)
      if (in.in_flight[p] < 0)
        input_error("memory model in_flight[{}] ({}) must be >= 0", p, in.in_flight[p]);
  }
}

}  // namespace

std::vector<StageMemory> MemoryModel::per_stage(const MemoryInputs& in) const {
  const int num_groups = static_cast<int>(group_params_sharded_.size());
  check_inputs(in, num_groups);
  const int chunks = in.pp * in.vpp;
  const int head_group = num_groups - 1;

  // Virtual stage -> layer groups (the caller's, not copied: the planner's search calls
  // this for every candidate).
  std::vector<std::vector<int>> even;
  const std::vector<std::vector<int>>& stage_layers = in.stage_layers.empty() ? even : in.stage_layers;
  if (in.stage_layers.empty()) {
    even.assign(static_cast<std::size_t>(chunks), {});
    const long long L = num_groups - 2;
    for (int c = 0; c < chunks; ++c)
      for (long long l = c * L / chunks; l < (c + 1) * L / chunks; ++l)
        even[static_cast<std::size_t>(c)].push_back(static_cast<int>(l + 1));
    even.front().insert(even.front().begin(), 0);
    even.back().push_back(head_group);
  }
  auto rank_of_chunk = [&](int c) { return c % in.pp; };
  int embedding_rank = 0, head_rank = in.pp - 1;
  for (int c = 0; c < chunks; ++c)
    for (int g : stage_layers[static_cast<std::size_t>(c)]) {
      if (g == 0) embedding_rank = rank_of_chunk(c);
      if (g == head_group) head_rank = rank_of_chunk(c);
    }

  const double t = in.tp;
  const double s = static_cast<double>(spec_.seq_len);
  const double b = static_cast<double>(in.micro_batch);
  const double h = static_cast<double>(spec_.hidden);
  const double sbh = s * b * h;
  const double sp_div = in.sequence_parallel ? t : 1.0;
  const double layer_act =
      layer_activation_bytes(spec_, in.micro_batch, in.tp, in.sequence_parallel, in.recompute,
                             in.attention_score_bytes, 0, 1, in.recompute_modules, in.storage);
  const double moe_layer_act =
      spec_.moe ? layer_activation_bytes(spec_, in.micro_batch, in.tp, in.sequence_parallel, in.recompute,
                                         in.attention_score_bytes, spec_.first_moe_layer(), in.etp,
                                         in.recompute_modules, in.storage)
                : layer_act;
  // Full recompute re-runs one layer at a time in the backward: that layer's whole activations
  // live beside the stored layer inputs (the largest of the rank's layers).
  const bool full = in.recompute == RecomputeMode::Full;
  if (in.recompute_layers < 0) input_error("memory model recompute_layers ({}) must be >= 0", in.recompute_layers);
  // A partial full recompute (in.recompute_layers > 0): the chunk's blocks past the first n
  // keep everything, as without recompute (rerun_dense / rerun_moe below); their routed part:
  const bool partial = full && in.recompute_layers > 0;
  const double kept_routed =
      partial && spec_.moe ? routed_activation_bytes(spec_, in.micro_batch, in.tp, RecomputeMode::None,
                                                     spec_.first_moe_layer(), in.etp, {}, in.storage)
                           : 0.0;
  const double rerun_dense =
      full ? layer_activation_bytes(spec_, in.micro_batch, in.tp, in.sequence_parallel, RecomputeMode::None,
                                    in.attention_score_bytes, 0, 1, {}, in.storage)
           : 0.0;
  const double rerun_moe =
      full && spec_.moe ? layer_activation_bytes(spec_, in.micro_batch, in.tp, in.sequence_parallel, RecomputeMode::None,
                                                 in.attention_score_bytes, spec_.first_moe_layer(), in.etp, {},
                                                 in.storage)
                        : rerun_dense;
  std::vector<double> rerun(static_cast<std::size_t>(in.pp), 0.0);
  const double moe_routed_act =
      spec_.moe ? routed_activation_bytes(spec_, in.micro_batch, in.tp, in.recompute, spec_.first_moe_layer(), in.etp,
                                          in.recompute_modules, in.storage)
                : 0.0;

  // Multi-token prediction on the head's rank, per depth: enorm, hnorm, eh_proj
  // (concatenated 2h), final-norm and LM-head inputs, 12sbh (/t with SP), and a block like
  // the last; its logits are counted with the main head's below.
  const double mtp_block_act = spec_.mtp_block_is_moe() ? moe_layer_act : layer_act;
  const double mtp_act = static_cast<double>(spec_.mtp_layers) * (12.0 * sbh / sp_div + mtp_block_act);

  std::vector<StageMemory> out(static_cast<std::size_t>(in.pp));
  std::vector<double> act_sum(static_cast<std::size_t>(in.pp), 0.0);
  std::vector<double> routed_sum(static_cast<std::size_t>(in.pp), 0.0);  // of act_sum: routed tokens
  std::vector<double> largest_group(static_cast<std::size_t>(in.pp), 0.0);  // params, one TP rank
  std::vector<double> fp8_rank(static_cast<std::size_t>(in.pp), 0.0);         // one TP rank
  std::vector<double> fp8_expert_rank(static_cast<std::size_t>(in.pp), 0.0);  // its routed experts
  for (int c = 0; c < chunks; ++c) {
    const int p = rank_of_chunk(c);
    StageMemory& m = out[static_cast<std::size_t>(p)];
    int chunk_blocks = 0;  // blocks of this chunk so far (the block method's count)
    for (int g : stage_layers[static_cast<std::size_t>(c)]) {
      const std::size_t gi = static_cast<std::size_t>(g);
      const double group_params = group_params_sharded_[gi] / t + group_params_replicated_[gi];
      const double expert = group_params_expert_[gi] / (static_cast<double>(in.ep) * in.etp);
      m.params += group_params + expert;
      m.expert_params += expert;
      fp8_rank[static_cast<std::size_t>(p)] += group_fp8_weights_[gi] / t;
      fp8_expert_rank[static_cast<std::size_t>(p)] +=
          group_fp8_expert_weights_[gi] / (static_cast<double>(in.ep) * in.etp);
      largest_group[static_cast<std::size_t>(p)] =
          std::max(largest_group[static_cast<std::size_t>(p)], group_params + expert);
      // Tied embeddings: the LM head uses the embedding table (Op::shared_params). On
      // the embedding's rank it is the same tensor; on another pipeline rank it is a
      // vocab-parallel copy (Megatron all-reduces the two gradients).
      if (p != embedding_rank) m.params += group_params_shared_[gi] / t;
      double& act = act_sum[static_cast<std::size_t>(p)];
      if (g == 0) act += sbh / sp_div;                 // embedding dropout mask (1 byte)
      else if (g == head_group) act += 4.0 * sbh / sp_div + mtp_act;  // final-norm + LM-head inputs
      const bool block = g > 0 && g < head_group;
      const bool kept = block && partial && chunk_blocks++ >= in.recompute_layers;  // not re-run
      if (kept) act += spec_.is_moe_layer(g) ? rerun_moe : rerun_dense;  // a whole block's activations
      else if (block) act += spec_.is_moe_layer(g) ? moe_layer_act : layer_act;
      if (block && !kept)
        rerun[static_cast<std::size_t>(p)] =
            std::max(rerun[static_cast<std::size_t>(p)], spec_.is_moe_layer(g) ? rerun_moe : rerun_dense);
      if (block && spec_.is_moe_layer(g)) routed_sum[static_cast<std::size_t>(p)] += kept ? kept_routed : moe_routed_act;
      if (g == head_group && spec_.mtp_block_is_moe())
        routed_sum[static_cast<std::size_t>(p)] += static_cast<double>(spec_.mtp_layers) * moe_routed_act;
    }
  }

  for (int p = 0; p < in.pp; ++p) {
    StageMemory& m = out[static_cast<std::size_t>(p)];
    const double dp = static_cast<double>(in.dp) * in.cp;  // ZeRO shards over dp x cp
    // Routed experts are replicated over edp = tp x cp x dp / (ep x etp) ranks (Megatron-Core
    // folds the experts over attention's ranks), everything else over dp x cp.
    const double edp =
        static_cast<double>(in.tp) * in.cp * in.dp / (static_cast<double>(in.ep) * in.etp);
    const double dense = m.params - m.expert_params;
    auto sharded = [&](int stage) {
      return in.zero >= stage ? dense / dp + m.expert_params / edp : m.params;
    };
    // FSDP2 keeps the fp32 weights (counted in the optimizer state) as the shards themselves.
    const bool fp32_shards = in.sharded_params_fp32 && in.zero >= 3;
    m.weights_bytes = fp32_shards ? 0.0 : in.weight_bytes * sharded(3);
    // ZeRO-3 gathers a layer's whole (TP-rank) parameters before using it and prefetches
    // the next: two groups' unsharded parameters live at once.
    if (in.zero >= 3 && dp > 1) m.weights_bytes += 2.0 * in.weight_bytes * largest_group[static_cast<std::size_t>(p)];
    if (in.fp8_weights && !in.fp8_params)
      m.weights_bytes += kFp8WeightCopyBytes * (fp8_rank[static_cast<std::size_t>(p)] / (in.zero >= 3 ? dp : 1.0) +
                                                fp8_expert_rank[static_cast<std::size_t>(p)] / (in.zero >= 3 ? edp : 1.0));
    m.grads_bytes = in.grad_buffer_bytes * sharded(2);
    // The optimizer's fp32 copy of a narrower gradient, over the parameters it steps. It lives
    // only through the optimizer step: Megatron's train_step frees it (zero_grad with
    // set_to_none) before the forward, so it reuses what the activations and logits held.
    m.step_grad_copy_bytes = optimizer_grad_copy_bytes(in.grad_buffer_bytes) * sharded(1);
    // ZeRO-2/3 keep only a shard of the gradients, but the backward of a layer group
    // produces its whole gradient before the reduce-scatter takes the shard out: one
    // group's full gradient lives at a time (the runtime's gathered-gradient buffer,
    // tests/integration/runtime_memory_test.cpp; FSDP's unsharded gradient of the unit).
    if (in.zero >= 2 && dp > 1) m.grads_bytes += in.grad_buffer_bytes * largest_group[static_cast<std::size_t>(p)];
    m.optimizer_bytes = in.optimizer_state_bytes * sharded(1);
    // The routed experts' part of the weights, gradients and optimizer state.
    const double expert_shard1 = in.zero >= 1 ? m.expert_params / edp : m.expert_params;
    const double expert_shard2 = in.zero >= 2 ? m.expert_params / edp : m.expert_params;
    const double expert_shard3 = in.zero >= 3 ? m.expert_params / edp : m.expert_params;
    m.expert_weights_bytes = fp32_shards ? 0.0 : in.weight_bytes * expert_shard3;
    m.expert_grads_optimizer_bytes = in.grad_buffer_bytes * expert_shard2 + in.optimizer_state_bytes * expert_shard1;

    long long flight;
    if (!in.in_flight.empty()) {
      flight = in.in_flight[static_cast<std::size_t>(p)];
    } else {
      flight = in.vpp == 1 ? in.pp - p
                           : 2LL * (in.pp - p - 1) + static_cast<long long>(in.vpp - 1) * in.pp + 1;
      if (in.num_microbatches > 0)
        flight = std::min<long long>(flight, in.num_microbatches * in.vpp);
    }
    m.activations_bytes =
        static_cast<double>(flight) * act_sum[static_cast<std::size_t>(p)] / in.vpp / in.cp;
    m.dispatch_activations_bytes =
        static_cast<double>(flight) * routed_sum[static_cast<std::size_t>(p)] / in.vpp / in.cp;
    if (p == head_rank) {
      // The main loss's and each MTP depth's logits with the loss's copies.
      const double logits_one = in.loss_bytes_per_logit * b * s * static_cast<double>(spec_.vocab) / t / in.cp;
      const double head_flight =
          static_cast<double>(in.head_in_flight > 0 ? in.head_in_flight : (flight + in.vpp - 1) / in.vpp);
      m.logits_bytes = logits_one * static_cast<double>(1 + spec_.mtp_layers) * head_flight;
      m.mtp_activations_bytes = static_cast<double>(flight) * mtp_act / in.vpp / in.cp +
                                logits_one * static_cast<double>(spec_.mtp_layers) * head_flight;
    }
    // The re-run layer comes after the loss's backward has freed its peak: it adds what it
    // needs beyond the logits (all of it off the head's rank).
    m.recompute_layer_bytes = rerun[static_cast<std::size_t>(p)] / in.cp;
    m.activations_bytes += std::max(0.0, m.recompute_layer_bytes - m.logits_bytes);
    m.reserve_bytes = reserve_bytes_;
    m.step_extra_bytes = std::max(0.0, m.step_grad_copy_bytes - m.activations_bytes - m.logits_bytes);
    m.total_bytes = m.weights_bytes + m.grads_bytes + m.optimizer_bytes + m.activations_bytes +
                    m.logits_bytes + m.step_extra_bytes + m.reserve_bytes;
  }
  return out;
}

double MemoryModel::peak_bytes(const MemoryInputs& in) const {
  double peak = 0;
  for (const auto& m : per_stage(in)) peak = std::max(peak, m.total_bytes);
  return peak;
}

}  // namespace strata::costmodel
