// Closed-form counts for a ModelSpec: parameters, matmul FLOPs and activation bytes.
// Written independently of ModelGraph (no graph walk), so tests can check one path
// against the other, and the planner/cost model can use them without building a graph
// (e.g. "model FLOPs" for MFU).
//
// Conventions (the same as the graph's):
// - FLOPs count matmuls only: GEMMs (2mnk) and the attention core (QK^T and AV,
//   4*b*s^2*h forward, no causal halving); backward = 2x forward.
// - Biases exist for GPT-style (gelu) models only (models::has_bias).
// - Activation bytes: Korthikanti et al. 2022, 2-byte activations, 1-byte dropout
//   masks, unsharded, one micro-batch of b sequences.
#pragma once
#include <cstdint>

#include "models/model_spec.h"

namespace strata::models {

// Parameters.
double block_params(const ModelSpec& spec);       // one transformer block
double embedding_params(const ModelSpec& spec);   // token table (+ learned positions)
double final_norm_params(const ModelSpec& spec);
double lm_head_params(const ModelSpec& spec);     // 0 when the embeddings are tied
double total_params(const ModelSpec& spec);       // tied table counted once

// Forward matmul FLOPs for `batch` sequences of spec.seq_len tokens.
double block_flops_fwd(const ModelSpec& spec, std::int64_t batch);
double lm_head_flops_fwd(const ModelSpec& spec, std::int64_t batch);

// FLOPs of one training iteration over `batch` sequences: forward + backward (2x) of
// every matmul, plus, with full recompute, one more forward of every block (the LM
// head is not recomputed). Any architecture (GQA, SwiGLU, any ffn).
double training_flops(const ModelSpec& spec, std::int64_t batch, bool full_recompute);
// "Model FLOPs" for MFU (no recompute counted) = training_flops(spec, batch, false).
double model_flops_per_iteration(const ModelSpec& spec, std::int64_t batch);
// Narayanan et al. 2021, eq. (3): 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)), the FLOPs of
// an iteration with full recompute, as Megatron-LM reports throughput. Exact for
// GPT blocks with ffn = 4h and kv_heads = heads (biases and elementwise work ignored).
double narayanan_flops_per_iteration(const ModelSpec& spec, std::int64_t batch);

// Korthikanti et al. 2022, Table 2 (no parallelism, no recompute), bytes per layer for
// b sequences: s*b*h*(34 + 5*a*s/h). Exact for GPT blocks (ffn = 4h, kv_heads = heads).
double korthikanti_activation_bytes_per_layer(const ModelSpec& spec, std::int64_t micro_batch);
// The same terms generalised to any block (the graph's per-op split, summed):
//   s*b*(14h + 4*kv_dim + mlp) + 5*a*s^2*b,  mlp = 4*ffn (gelu) or 6*ffn (swiglu).
// For GPT (kv_dim = h, ffn = 4h) this is s*b*h*(34 + 5as/h).
double block_activation_bytes(const ModelSpec& spec, std::int64_t micro_batch);
// The attention-score part that selective recompute drops: 5*a*s^2*b.
double block_selective_recompute_bytes(const ModelSpec& spec, std::int64_t micro_batch);

}  // namespace strata::models
