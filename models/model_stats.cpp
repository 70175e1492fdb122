#include "models/model_stats.h"

namespace strata::models {
namespace {
double d(std::int64_t x) { return static_cast<double>(x); }
double norm_params(const ModelSpec& m) { return m.norm == Norm::LayerNorm ? 2 * d(m.hidden) : d(m.hidden); }
}  // namespace

double block_params(const ModelSpec& m) {
  const double h = d(m.hidden), f = d(m.ffn), kv = d(m.kv_dim());
  const double bias = has_bias(m) ? 1.0 : 0.0;
  const double attention = h * (h + 2 * kv) + bias * (h + 2 * kv)  // QKV
                           + h * h + bias * h;                      // out-proj
  const double mlp = m.activation == Activation::SwiGlu
                         ? 3 * h * f + bias * (2 * f + h)
                         : 2 * h * f + bias * (f + h);
  return attention + mlp + 2 * norm_params(m);
}

double embedding_params(const ModelSpec& m) {
  return d(m.vocab) * d(m.hidden) +
         (m.positions == Positions::Learned ? d(m.seq_len) * d(m.hidden) : 0.0);
}

double final_norm_params(const ModelSpec& m) { return norm_params(m); }

double lm_head_params(const ModelSpec& m) {
  return m.tied_embeddings ? 0.0 : d(m.vocab) * d(m.hidden);
}

double total_params(const ModelSpec& m) {
  return d(m.layers) * block_params(m) + embedding_params(m) + final_norm_params(m) +
         lm_head_params(m);
}

double block_flops_fwd(const ModelSpec& m, std::int64_t batch) {
  const double t = d(batch) * d(m.seq_len), s = d(m.seq_len);
  const double h = d(m.hidden), f = d(m.ffn), kv = d(m.kv_dim());
  const double gemm_weights = h * (h + 2 * kv) + h * h +
                              (m.activation == Activation::SwiGlu ? 3 : 2) * h * f;
  return 2 * t * gemm_weights + 4 * t * s * h;
}

double lm_head_flops_fwd(const ModelSpec& m, std::int64_t batch) {
  return 2 * d(batch) * d(m.seq_len) * d(m.hidden) * d(m.vocab);
}

double training_flops(const ModelSpec& m, std::int64_t batch, bool full_recompute) {
  const double blocks = d(m.layers) * block_flops_fwd(m, batch);
  const double fwd = blocks + lm_head_flops_fwd(m, batch);
  return 3 * fwd + (full_recompute ? blocks : 0.0);
}

double model_flops_per_iteration(const ModelSpec& m, std::int64_t batch) {
  return training_flops(m, batch, false);
}

double narayanan_flops_per_iteration(const ModelSpec& m, std::int64_t batch) {
  const double B = d(batch), s = d(m.seq_len), l = d(m.layers), h = d(m.hidden), V = d(m.vocab);
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

double korthikanti_activation_bytes_per_layer(const ModelSpec& m, std::int64_t micro_batch) {
  const double s = d(m.seq_len), b = d(micro_batch), h = d(m.hidden), a = d(m.heads);
  return s * b * h * (34 + 5 * a * s / h);
}

double block_activation_bytes(const ModelSpec& m, std::int64_t micro_batch) {
  const double s = d(m.seq_len), b = d(micro_batch), h = d(m.hidden);
  const double mlp = (m.activation == Activation::SwiGlu ? 6 : 4) * d(m.ffn);
  return s * b * (14 * h + 4 * d(m.kv_dim()) + mlp) + block_selective_recompute_bytes(m, micro_batch);
}

double block_selective_recompute_bytes(const ModelSpec& m, std::int64_t micro_batch) {
  const double s = d(m.seq_len), b = d(micro_batch), a = d(m.heads);
  return 5 * a * s * s * b;
}

}  // namespace strata::models
