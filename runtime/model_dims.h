// ModelDims: the sizes one tensor-parallel rank works with for one micro-batch, derived
// from the model spec and the strategy. Full sizes (hidden, heads, ...) and this rank's
// shards (heads_local, ffn_local, the vocabulary rows [vocab_begin, +vocab_local)).
#pragma once
#include <cstddef>
#include <cstdint>

#include "models/model_spec.h"
#include "runtime/context_parallel.h"
#include "planner/strategy.h"

namespace strata::runtime {

struct ModelDims {
  models::ModelSpec spec;
  std::size_t batch = 1;     // sequences per micro-batch
  // seq: the tokens of a sequence this rank holds (full_seq / cp with context parallel)
  std::size_t seq = 0, full_seq = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0;
  std::size_t layers = 0;
  int tp = 1, tp_rank = 0;
  // Context parallel (load-balanced causal chunks, as Megatron-Core): the sequence is cut
  // into 2 * cp chunks of full_seq / (2 cp) tokens; rank r holds chunks r and 2cp-1-r,
  // in that order, so every rank gets the same share of the causal attention work.
  int cp = 1, cp_rank = 0;
  bool sequence_parallel = false;
  planner::Recompute recompute = planner::Recompute::None;
  // Vocabulary shard (Megatron pads the vocabulary to planner::padded_vocab(vocab, tp) and
  // gives each rank padded/tp rows; rows past the real vocabulary are not materialized).
  std::int64_t vocab_begin = 0, vocab_local = 0;
  // Expert parallel (mixture-of-experts models): this rank holds the routed experts
  // [expert_begin(), + experts_local()) of every MoE block, and of each the FFN slice
  // [etp_rank * expert_ffn_local(), + expert_ffn_local()) (expert tensor parallel).
  int ep = 1, ep_rank = 0;
  int etp = 1, etp_rank = 0;

  std::size_t heads_local() const { return heads / tp; }
  std::size_t kv_heads_local() const { return kv_heads / tp; }
  std::size_t ffn_local() const { return ffn / tp; }
  std::size_t q_width_local() const { return heads_local() * head_dim; }
  std::size_t kv_width_local() const { return kv_heads_local() * head_dim; }
  std::size_t qkv_width_local() const { return q_width_local() + 2 * kv_width_local(); }
  std::size_t rows() const { return batch * seq; }  // tokens of the micro-batch
  // Token rows this rank holds outside the column/row-parallel regions.
  std::size_t local_rows() const { return sequence_parallel ? rows() / tp : rows(); }
  // Position in the full sequence of this rank's local sequence index t (0..seq-1).
  std::size_t position(std::size_t t) const { return cp_position(full_seq, cp, cp_rank, t); }
  bool has_bias() const { return models::has_bias(spec); }
  bool layernorm() const { return spec.norm == models::Norm::LayerNorm; }
  bool gelu() const { return spec.activation == models::Activation::Gelu; }
  bool rope() const { return spec.positions == models::Positions::Rope; }
  bool learned_positions() const { return spec.positions == models::Positions::Learned; }
  bool tied() const { return spec.tied_embeddings; }
  // Block `index` (0-based) has the MoE MLP (models::ModelSpec::is_moe_layer: past the model's
  // first_dense_layers, every moe.layer_step-th block).
  bool moe_block(int index) const { return spec.is_moe_layer(static_cast<std::int64_t>(index) + 1); }
  std::size_t experts() const { return spec.moe ? static_cast<std::size_t>(spec.moe->experts) : 0; }
  std::size_t experts_local() const { return experts() / static_cast<std::size_t>(ep); }
  std::size_t expert_begin() const { return experts_local() * static_cast<std::size_t>(ep_rank); }
  std::size_t top_k() const { return spec.moe ? static_cast<std::size_t>(spec.moe->top_k) : 0; }
  std::size_t expert_ffn() const { return spec.moe ? static_cast<std::size_t>(spec.moe->expert_ffn) : 0; }
  std::size_t expert_ffn_local() const { return expert_ffn() / static_cast<std::size_t>(etp); }
  // The shared experts as one dense MLP of their summed width (the same function: an
  // MLP's hidden units are independent), tensor-parallel like the dense MLP.
  std::size_t shared_ffn() const {
    return spec.moe ? static_cast<std::size_t>(spec.moe->shared_experts * spec.moe->shared_expert_ffn) : 0;
  }
  std::size_t shared_ffn_local() const { return shared_ffn() / static_cast<std::size_t>(tp); }
};

// InputError when the model cannot be split this way (heads, kv_heads, ffn, hidden not
// divisible by tp; odd head_dim with RoPE; tokens not divisible by tp with SP; seq_len
// not divisible by 2 * cp; experts not divisible by ep, expert_ffn by etp) or has what the runtime does not
// build (MLA; biases, or tp > 1 without SP in an MoE model).
ModelDims make_model_dims(const models::ModelSpec& spec, std::int64_t micro_batch, int tp,
                          int tp_rank, bool sequence_parallel, planner::Recompute recompute,
                          int cp = 1, int cp_rank = 0, int ep = 1, int ep_rank = 0, int etp = 1,
                          int etp_rank = 0);

}  // namespace strata::runtime
