// Closed-form counts for a ModelSpec: parameters, matmul FLOPs and activation bytes.
// Written independently of ModelGraph (no graph walk), so tests can check one path
// against the other, and the planner/cost model can use them without building a graph
// (e.g. "model FLOPs" for MFU).
//
// Conventions (the same as the graph's):
// - FLOPs count matmuls only: GEMMs (2mnk) and the attention core (QK^T and AV,
//   4*b*s^2*heads*head_dim forward, no causal halving); backward = 2x forward.
// - Biases exist for GPT-style (gelu) models only (models::has_bias).
// - Activation bytes: Korthikanti et al. 2022, 2-byte activations, 1-byte dropout
//   masks, unsharded, one micro-batch of b sequences.
// - Mixture of experts: "total" counts every expert, "active" what one token uses (the
//   router, top_k routed experts, the shared experts, and everything outside the MLPs,
//   embeddings included, as Mixtral's 12.9B and Qwen1.5-MoE's 2.7B are counted). FLOPs
//   are active FLOPs (each token runs through top_k experts): MFU uses them.
#pragma once
#include <cstdint>

#include "models/model_spec.h"

namespace strata::models {

// Parameters.
double attention_params(const ModelSpec& spec);   // Q/K/V (or MLA projections and latent
                                                  // norms) + output projection, with biases
double dense_mlp_params(const ModelSpec& spec, std::int64_t ffn);  // one MLP of inner width ffn
double moe_mlp_params(const ModelSpec& spec);        // router + every routed + shared expert
double moe_mlp_active_params(const ModelSpec& spec); // router + top_k routed + shared experts
double block_params(const ModelSpec& spec);       // one transformer block with the dense MLP
double layer_params(const ModelSpec& spec, std::int64_t layer);         // block `layer` (1-based)
double layer_active_params(const ModelSpec& spec, std::int64_t layer);  // its active part
double embedding_params(const ModelSpec& spec);   // token table (+ learned positions)
double final_norm_params(const ModelSpec& spec);
double lm_head_params(const ModelSpec& spec);     // 0 when the embeddings are tied
// Multi-token prediction (ModelSpec::mtp_layers): one depth's own parameters (enorm, hnorm
// and final norm, eh_proj 2h x h, a block like the last); the embedding and output head
// are the main model's and are not counted again.
double mtp_depth_params(const ModelSpec& spec);
double mtp_params(const ModelSpec& spec);         // mtp_layers x mtp_depth_params
double main_model_params(const ModelSpec& spec);  // without the MTP depths (DeepSeek-V3: 671B)
double total_params(const ModelSpec& spec);       // main + MTP (what is trained); tied table once
double main_model_active_params(const ModelSpec& spec);
double active_params(const ModelSpec& spec);      // main + MTP; = total_params for dense models

// Forward matmul FLOPs for `batch` sequences of spec.seq_len tokens.
double block_flops_fwd(const ModelSpec& spec, std::int64_t batch);  // dense-MLP block
double layer_flops_fwd(const ModelSpec& spec, std::int64_t batch, std::int64_t layer);  // active
double lm_head_flops_fwd(const ModelSpec& spec, std::int64_t batch);

// FLOPs of one training iteration over `batch` sequences: forward + backward (2x) of
// every matmul, plus, with full recompute, one more forward of every block (the LM
// head is not recomputed). Any architecture (GQA, MLA, SwiGLU, MoE: active FLOPs).
// Multi-token prediction is trained work and is counted, as Megatron-LM's
// num_floating_point_operations counts it (megatron/training/training.py at 86df799d):
// per depth a block like the last, eh_proj (2 * tokens * 2h * h forward) and one more LM
// head; its depths are not recomputed (strata keeps their activations, see
// mtp_depth_activation_bytes).
double training_flops(const ModelSpec& spec, std::int64_t batch, bool full_recompute);
// "Model FLOPs" for MFU (no recompute counted) = training_flops(spec, batch, false).
double model_flops_per_iteration(const ModelSpec& spec, std::int64_t batch);
// The same iteration if every token ran through every routed expert (the "total" FLOPs
// of an MoE model; = model_flops_per_iteration for dense models). Not used for MFU.
double all_experts_flops_per_iteration(const ModelSpec& spec, std::int64_t batch);
// Narayanan et al. 2021, eq. (3): 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)), the FLOPs of
// an iteration with full recompute, as Megatron-LM reports throughput. Exact for
// GPT blocks with ffn = 4h and kv_heads = heads (biases and elementwise work ignored).
double narayanan_flops_per_iteration(const ModelSpec& spec, std::int64_t batch);

// Korthikanti et al. 2022, Table 2 (no parallelism, no recompute), bytes per layer for
// b sequences: s*b*h*(34 + 5*a*s/h). Exact for GPT blocks (ffn = 4h, kv_heads = heads).
double korthikanti_activation_bytes_per_layer(const ModelSpec& spec, std::int64_t micro_batch);
// The same terms generalised to any dense-MLP block (the graph's per-op split, summed):
//   s*b*(10h + 2q + 4*kv_dim + 2q + mlp) + 5*a*s^2*b,  q = heads*head_dim,
//   mlp = 4*ffn (gelu) or 6*ffn (swiglu); MLA: Q, K, V at their per-head widths plus the
//   latents (q_lora_rank, kv_lora_rank + qk_rope_head_dim).
// For GPT (kv_dim = q = h, ffn = 4h) this is s*b*h*(34 + 5as/h).
double block_activation_bytes(const ModelSpec& spec, std::int64_t micro_batch);
// Block `layer` (1-based): the dense block's terms, with an MoE layer's MLP part
//   s*b*(4*experts (fp32 router probabilities) + top_k*(2h + mlp(expert_ffn) + 2h)
//        + shared_experts*mlp(shared_expert_ffn))
// (per routed copy of a token: its permuted input, the expert's activations, and the
// expert output kept for the gradient of its routing weight).
double layer_activation_bytes(const ModelSpec& spec, std::int64_t micro_batch, std::int64_t layer);
// One multi-token-prediction depth, one micro-batch (t = b*s tokens): enorm and hnorm
// inputs 4th, eh_proj's concatenated input 4th, layer_activation_bytes of the last layer,
// final-norm and LM-head inputs 4th, the loss's fp32 logits 4tV.
double mtp_depth_activation_bytes(const ModelSpec& spec, std::int64_t micro_batch);
// The attention-score part that selective recompute drops: 5*a*s^2*b.
double block_selective_recompute_bytes(const ModelSpec& spec, std::int64_t micro_batch);

}  // namespace strata::models
