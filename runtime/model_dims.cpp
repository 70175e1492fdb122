#include "runtime/model_dims.h"

#include <algorithm>

#include "common/errors.h"
#include "runtime/rope.h"

namespace strata::runtime {

ModelDims make_model_dims(const models::ModelSpec& spec, std::int64_t micro_batch, int tp,
                          int tp_rank, bool sequence_parallel, planner::Recompute recompute,
                          int cp, int cp_rank, int ep, int ep_rank, int etp, int etp_rank) {
  if (cp < 1) input_error("strategy.cp ({}) must be >= 1", cp);
  if (cp > 1 && spec.seq_len % (2 * cp) != 0)
    input_error("strategy.cp ({}) needs model.seq_len ({}) divisible by 2 x cp = {} (the "
                "sequence is cut into 2 x cp load-balanced causal chunks)",
                cp, spec.seq_len, 2 * cp);
  const std::int64_t local_seq = spec.seq_len / cp;
  if (tp < 1) input_error("strategy.tp ({}) must be >= 1", tp);
  if (micro_batch < 1) input_error("strategy.micro_batch ({}) must be >= 1", micro_batch);
  // The runtime trains dense GPT / Llama blocks; a spec it cannot build is refused by
  // name, never trained as a different (dense) model.
  if (ep < 1) input_error("strategy.ep ({}) must be >= 1", ep);
  if (etp < 1) input_error("strategy.etp ({}) must be >= 1", etp);
  if (etp > 1 && !spec.moe)
    input_error("strategy.etp ({}) needs a mixture-of-experts model (model '{}' has no moe: section)", etp,
                spec.name);
  if (ep > 1 && !spec.moe)
    input_error("strategy.ep ({}) needs a mixture-of-experts model (model '{}' has no moe: section)", ep,
                spec.name);
  if (spec.moe) {
    const models::MoeSpec& e = *spec.moe;
    // A capacity factor drops tokens per routing rank (runtime/expert_capacity.h).
    if (models::has_bias(spec))
      input_error("model '{}': the strata runtime builds mixture-of-experts blocks without biases "
                  "(as Mixtral, Qwen-MoE and DeepSeek); the model has linear biases", spec.name);
    if (e.experts % ep != 0)
      input_error("strategy.ep ({}) must divide model.moe.experts ({})", ep, e.experts);
    if (e.expert_ffn % etp != 0)
      input_error("strategy.etp ({}) must divide model.moe.expert_ffn ({})", etp, e.expert_ffn);
    if (e.top_k < 1 || e.top_k > e.experts)
      input_error("model.moe.top_k ({}) must be in 1 .. model.moe.experts ({})", e.top_k, e.experts);
    // With tp > 1 each TP rank routes its own sequence-parallel share of the tokens
    // (Megatron-Core requires sequence parallelism with MoE and TP).
    if (tp > 1 && !sequence_parallel)
      input_error("strategy.sequence_parallel must be true with strategy.tp ({}) > 1 for a "
                  "mixture-of-experts model (Megatron-Core requires it)", tp);
    if ((e.shared_experts * e.shared_expert_ffn) % tp != 0)
      input_error("strategy.tp ({}) must divide the shared experts' width ({} x {})", tp,
                  e.shared_experts, e.shared_expert_ffn);
  }
  if (spec.mtp_layers > 0)
    input_error("model '{}': mtp_layers ({}) adds multi-token-prediction depths, which the strata "
                "runtime does not build (set mtp_layers: 0 to train the main model only)",
                spec.name, spec.mtp_layers);
  if (spec.mla)
    input_error("model '{}' uses multi-head latent attention (model.mla); the strata runtime "
                "implements mha/gqa attention only", spec.name);
  if (spec.qk_norm)
    input_error("model '{}' has per-head Q and K norms (model.qk_norm), which the strata runtime does "
                "not build (set qk_norm: false to train the layout without them)",
                spec.name);
  // runtime/rope.h rotates with base kRopeBase; another base would train a different model.
  if (spec.positions == models::Positions::Rope && spec.rope_base != kRopeBase)
    input_error("model '{}': rope_base {} is not supported by the CPU runtime (its RoPE uses base {})",
                spec.name, spec.rope_base, kRopeBase);
  if (spec.explicit_head_dim != 0 && spec.explicit_head_dim * spec.heads != spec.hidden)
    input_error("model.head_dim ({}) differs from hidden / heads ({} / {}); the strata runtime "
                "needs head_dim = hidden / heads", spec.explicit_head_dim, spec.hidden, spec.heads);
  if (spec.heads <= 0 || spec.hidden % spec.heads != 0)
    input_error("model.hidden ({}) must be divisible by model.heads ({})", spec.hidden, spec.heads);
  const std::int64_t kv = spec.kv_heads > 0 ? spec.kv_heads : spec.heads;
  if (spec.heads % kv != 0)
    input_error("model.kv_heads ({}) must divide model.heads ({})", kv, spec.heads);
  if (spec.heads % tp != 0) input_error("strategy.tp ({}) must divide model.heads ({})", tp, spec.heads);
  if (kv % tp != 0) input_error("strategy.tp ({}) must divide model.kv_heads ({})", tp, kv);
  if (spec.ffn % tp != 0) input_error("strategy.tp ({}) must divide model.ffn ({})", tp, spec.ffn);
  if (spec.positions == models::Positions::Rope && spec.head_dim() % 2 != 0)
    input_error("model head_dim ({} = hidden / heads) must be even for rope positions",
                spec.head_dim());
  if (sequence_parallel && (micro_batch * local_seq) % tp != 0)
    input_error("strategy.sequence_parallel needs strategy.tp ({}) to divide the tokens of a "
                "micro-batch on one context-parallel rank ({})", tp, micro_batch * local_seq);
  ModelDims d;
  d.spec = spec;
  d.spec.kv_heads = kv;
  d.batch = static_cast<std::size_t>(micro_batch);
  d.seq = static_cast<std::size_t>(local_seq);
  d.full_seq = static_cast<std::size_t>(spec.seq_len);
  d.cp = cp;
  d.cp_rank = cp_rank;
  d.hidden = static_cast<std::size_t>(spec.hidden);
  d.heads = static_cast<std::size_t>(spec.heads);
  d.kv_heads = static_cast<std::size_t>(kv);
  d.head_dim = static_cast<std::size_t>(spec.head_dim());
  d.ffn = static_cast<std::size_t>(spec.ffn);
  d.vocab = static_cast<std::size_t>(spec.vocab);
  d.layers = static_cast<std::size_t>(spec.layers);
  d.tp = tp;
  d.tp_rank = tp_rank;
  d.sequence_parallel = sequence_parallel && tp > 1;
  d.recompute = recompute;
  d.ep = ep;
  d.ep_rank = ep_rank;
  d.etp = etp;
  d.etp_rank = etp_rank;
  const std::int64_t per_rank = planner::padded_vocab(spec.vocab, tp) / tp;
  d.vocab_begin = std::min<std::int64_t>(spec.vocab, per_rank * tp_rank);
  d.vocab_local = std::clamp<std::int64_t>(spec.vocab - per_rank * tp_rank, 0, per_rank);
  return d;
}

}  // namespace strata::runtime
