#include "models/model_stats.h"

namespace strata::models {
namespace {
double d(std::int64_t x) { return static_cast<double>(x); }
double norm_params(const ModelSpec& m) { return m.norm == Norm::LayerNorm ? 2 * d(m.hidden) : d(m.hidden); }
double mlp_matrices(const ModelSpec& m) { return m.activation == Activation::SwiGlu ? 3 : 2; }
// Bytes per token an MLP of inner width f keeps for the backward: GELU its input and
// output (2f each), SwiGLU gate, up and their product (2f each).
double mlp_activation_per_token(const ModelSpec& m, double f) {
  return (m.activation == Activation::SwiGlu ? 6 : 4) * f;
}

// Matmul weights a token multiplies in the attention block (Q/K/V or the MLA
// projections, and the output projection).
double attention_gemm_weights(const ModelSpec& m) {
  const double h = d(m.hidden);
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    const double heads = d(m.heads), qk = d(a.qk_head_dim());
    const double q = a.q_lora_rank > 0 ? h * d(a.q_lora_rank) + d(a.q_lora_rank) * heads * qk : h * heads * qk;
    const double kv = h * d(a.kv_lora_rank + a.qk_rope_head_dim) +
                      d(a.kv_lora_rank) * heads * d(a.qk_nope_head_dim + a.v_head_dim);
    return q + kv + heads * d(a.v_head_dim) * h;
  }
  const double q = d(m.q_dim()), kv = d(m.kv_dim());
  return h * (q + 2 * kv) + q * h;
}

// Forward FLOPs of QK^T and AV for t tokens in sequences of s.
double attention_core_flops(const ModelSpec& m, double t) {
  const double s = d(m.seq_len);
  if (m.mla) return 2 * t * s * d(m.heads) * d(m.mla->qk_head_dim() + m.mla->v_head_dim);
  return 4 * t * s * d(m.q_dim());
}

double dense_mlp_flops(const ModelSpec& m, double t, double f) { return 2 * t * mlp_matrices(m) * d(m.hidden) * f; }

double moe_mlp_flops(const ModelSpec& m, double t, double routed_experts_per_token) {
  const MoeSpec& e = *m.moe;
  return 2 * t * d(m.hidden) * d(e.experts)  // router
         + routed_experts_per_token * dense_mlp_flops(m, t, d(e.expert_ffn)) +
         d(e.shared_experts) * dense_mlp_flops(m, t, d(e.shared_expert_ffn));
}

double layer_flops(const ModelSpec& m, std::int64_t batch, std::int64_t layer, bool all_experts) {
  const double t = d(batch) * d(m.seq_len);
  const double attention = 2 * t * attention_gemm_weights(m) + attention_core_flops(m, t);
  if (!m.is_moe_layer(layer)) return attention + dense_mlp_flops(m, t, d(m.ffn));
  return attention + moe_mlp_flops(m, t, d(all_experts ? m.moe->experts : m.moe->top_k));
}

// One multi-token-prediction depth outside its block: eh_proj (2h -> h) over every token.
double mtp_projection_flops(const ModelSpec& m, double t) { return 2 * t * 2 * d(m.hidden) * d(m.hidden); }

double flops_per_iteration(const ModelSpec& m, std::int64_t batch, bool all_experts, bool full_recompute) {
  double blocks = 0;
  for (std::int64_t l = 1; l <= m.layers; ++l) blocks += layer_flops(m, batch, l, all_experts);
  // Each MTP depth: a block like the last, eh_proj and one more LM head (Megatron-LM
  // num_floating_point_operations counts the same, megatron/training/training.py at 86df799d).
  const double mtp = d(m.mtp_layers) * (layer_flops(m, batch, m.layers, all_experts) +
                                        mtp_projection_flops(m, d(batch) * d(m.seq_len)));
  const double heads = d(1 + m.mtp_layers) * lm_head_flops_fwd(m, batch);
  return 3 * (blocks + mtp + heads) + (full_recompute ? blocks : 0.0);
}
}  // namespace

double attention_params(const ModelSpec& m) {
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    // Latent RMSNorms (DeepSeek's q_a_layernorm, kv_a_layernorm); no projection biases.
    return attention_gemm_weights(m) + d(a.q_lora_rank) + d(a.kv_lora_rank);
  }
  const double h = d(m.hidden), q = d(m.q_dim()), kv = d(m.kv_dim());
  const double bias = has_bias(m) ? 1.0 : 0.0;
  // Per-head Q and K norms: head_dim weights each (and biases with LayerNorm).
  const double qk_norms = m.qk_norm ? 2.0 * d(m.head_dim()) * (m.norm == Norm::LayerNorm ? 2.0 : 1.0) : 0.0;
  return attention_gemm_weights(m) + bias * (q + 2 * kv) + bias * h + qk_norms;
}

double dense_mlp_params(const ModelSpec& m, std::int64_t ffn) {
  const double h = d(m.hidden), f = d(ffn);
  const double bias = has_bias(m) ? 1.0 : 0.0;
  return m.activation == Activation::SwiGlu ? 3 * h * f + bias * (2 * f + h)
                                            : 2 * h * f + bias * (f + h);
}

double moe_mlp_params(const ModelSpec& m) {
  if (!m.moe) return 0;
  const MoeSpec& e = *m.moe;
  return d(m.hidden) * d(e.experts) + d(e.experts) * dense_mlp_params(m, e.expert_ffn) +
         d(e.shared_experts) * (e.shared_experts > 0 ? dense_mlp_params(m, e.shared_expert_ffn) : 0.0);
}

double moe_mlp_active_params(const ModelSpec& m) {
  if (!m.moe) return 0;
  const MoeSpec& e = *m.moe;
  return d(m.hidden) * d(e.experts) + d(e.top_k) * dense_mlp_params(m, e.expert_ffn) +
         d(e.shared_experts) * (e.shared_experts > 0 ? dense_mlp_params(m, e.shared_expert_ffn) : 0.0);
}

double block_params(const ModelSpec& m) {
  return attention_params(m) + dense_mlp_params(m, m.ffn) + 2 * norm_params(m);
}

double layer_params(const ModelSpec& m, std::int64_t layer) {
  if (!m.is_moe_layer(layer)) return block_params(m);
  return attention_params(m) + moe_mlp_params(m) + 2 * norm_params(m);
}

double layer_active_params(const ModelSpec& m, std::int64_t layer) {
  if (!m.is_moe_layer(layer)) return block_params(m);
  return attention_params(m) + moe_mlp_active_params(m) + 2 * norm_params(m);
}

double embedding_params(const ModelSpec& m) {
  return d(m.vocab) * d(m.hidden) +
         (m.positions == Positions::Learned ? d(m.seq_len) * d(m.hidden) : 0.0);
}

double final_norm_params(const ModelSpec& m) { return norm_params(m); }

double lm_head_params(const ModelSpec& m) {
  return m.tied_embeddings ? 0.0 : d(m.vocab) * d(m.hidden);
}

double mtp_depth_params(const ModelSpec& m) {
  // enorm, hnorm and the final norm; eh_proj (2h x h, no bias); the block like the last.
  return 3 * norm_params(m) + 2 * d(m.hidden) * d(m.hidden) + layer_params(m, m.layers);
}

double mtp_params(const ModelSpec& m) { return d(m.mtp_layers) * mtp_depth_params(m); }

double main_model_params(const ModelSpec& m) {
  double blocks = 0;
  for (std::int64_t l = 1; l <= m.layers; ++l) blocks += layer_params(m, l);
  return blocks + embedding_params(m) + final_norm_params(m) + lm_head_params(m);
}

double total_params(const ModelSpec& m) { return main_model_params(m) + mtp_params(m); }

double main_model_active_params(const ModelSpec& m) {
  double blocks = 0;
  for (std::int64_t l = 1; l <= m.layers; ++l) blocks += layer_active_params(m, l);
  return blocks + embedding_params(m) + final_norm_params(m) + lm_head_params(m);
}

double active_params(const ModelSpec& m) {
  const double mtp_depth = 3 * norm_params(m) + 2 * d(m.hidden) * d(m.hidden) + layer_active_params(m, m.layers);
  return main_model_active_params(m) + d(m.mtp_layers) * mtp_depth;
}

double block_flops_fwd(const ModelSpec& m, std::int64_t batch) {
  const double t = d(batch) * d(m.seq_len);
  return 2 * t * attention_gemm_weights(m) + attention_core_flops(m, t) + dense_mlp_flops(m, t, d(m.ffn));
}

double layer_flops_fwd(const ModelSpec& m, std::int64_t batch, std::int64_t layer) {
  return layer_flops(m, batch, layer, false);
}

double lm_head_flops_fwd(const ModelSpec& m, std::int64_t batch) {
  return 2 * d(batch) * d(m.seq_len) * d(m.hidden) * d(m.vocab);
}

double training_flops(const ModelSpec& m, std::int64_t batch, bool full_recompute) {
  return flops_per_iteration(m, batch, false, full_recompute);
}

double model_flops_per_iteration(const ModelSpec& m, std::int64_t batch) {
  return training_flops(m, batch, false);
}

double all_experts_flops_per_iteration(const ModelSpec& m, std::int64_t batch) {
  return flops_per_iteration(m, batch, true, false);
}

double narayanan_flops_per_iteration(const ModelSpec& m, std::int64_t batch) {
  const double B = d(batch), s = d(m.seq_len), l = d(m.layers), h = d(m.hidden), V = d(m.vocab);
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

double korthikanti_activation_bytes_per_layer(const ModelSpec& m, std::int64_t micro_batch) {
  const double s = d(m.seq_len), b = d(micro_batch), h = d(m.hidden), a = d(m.heads);
  return s * b * h * (34 + 5 * a * s / h);
}

namespace {
// Per token, the block's terms outside its MLP: norm inputs, QKV and MLP inputs, dropout
// masks (10h), Q, K, V and the output projection's input.
double attention_activation_per_token(const ModelSpec& m) {
  const double h = d(m.hidden);
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    const double heads = d(m.heads);
    return 10 * h + 2 * heads * d(a.qk_head_dim()) * 2 + 2 * heads * d(a.v_head_dim)  // Q, K, V
           + 2 * d(a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim)               // latents
           + 2 * heads * d(a.v_head_dim);                                              // out-proj input
  }
  // Per-head Q and K norms (qk_norm) keep their inputs: Q and K once more.
  const double qk_norms = m.qk_norm ? 2 * d(m.q_dim() + m.kv_dim()) : 0.0;
  return 10 * h + 2 * d(m.q_dim()) + 4 * d(m.kv_dim()) + 2 * d(m.q_dim()) + qk_norms;
}
}  // namespace

double block_activation_bytes(const ModelSpec& m, std::int64_t micro_batch) {
  const double s = d(m.seq_len), b = d(micro_batch);
  return s * b * (attention_activation_per_token(m) + mlp_activation_per_token(m, d(m.ffn))) +
         block_selective_recompute_bytes(m, micro_batch);
}

double layer_activation_bytes(const ModelSpec& m, std::int64_t micro_batch, std::int64_t layer) {
  if (!m.is_moe_layer(layer)) return block_activation_bytes(m, micro_batch);
  const MoeSpec& e = *m.moe;
  const double s = d(m.seq_len), b = d(micro_batch), h = d(m.hidden);
  const double moe = 4 * d(e.experts) +
                     d(e.top_k) * (2 * h + mlp_activation_per_token(m, d(e.expert_ffn)) + 2 * h) +
                     d(e.shared_experts) * mlp_activation_per_token(m, d(e.shared_expert_ffn));
  return s * b * (attention_activation_per_token(m) + moe) + block_selective_recompute_bytes(m, micro_batch);
}

double mtp_depth_activation_bytes(const ModelSpec& m, std::int64_t micro_batch) {
  const double t = d(micro_batch) * d(m.seq_len), h = d(m.hidden);
  // enorm and hnorm inputs (2th each), eh_proj's concatenated input (4th), the block, the
  // final norm and LM-head inputs (2th each), the fp32 logits of its loss (4tV).
  return 4 * t * h + 4 * t * h + layer_activation_bytes(m, micro_batch, m.layers) + 4 * t * h +
         4 * t * d(m.vocab);
}

double block_selective_recompute_bytes(const ModelSpec& m, std::int64_t micro_batch) {
  const double s = d(m.seq_len), b = d(micro_batch), a = d(m.heads);
  return 5 * a * s * s * b;
}

}  // namespace strata::models
