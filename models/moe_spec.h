// MoeSpec: the mixture-of-experts MLP of a decoder block (Mixtral, Qwen-MoE, DeepSeek).
// A layer past the first `first_dense_layers` whose 1-based index is a multiple of
// `layer_step` (every layer when 1; ModelSpec::is_moe_layer) replaces the dense MLP by a router
// (h -> experts logits), `experts` routed expert MLPs of width `expert_ffn` of which each
// token uses `top_k`, and `shared_experts` always-on expert MLPs of width
// `shared_expert_ffn` each (DeepSeek's shared experts; Qwen2-MoE's one shared expert).
// Expert MLPs use the model's activation (SwiGLU: gate, up, down projections).
#pragma once
#include <cstdint>

namespace strata::models {

enum class RouterKind { Softmax, Sigmoid };  // Mixtral/Qwen: softmax; DeepSeek-V3: sigmoid

struct MoeSpec {
  std::int64_t experts = 0;            // routed experts per MoE layer
  std::int64_t top_k = 0;              // routed experts each token uses
  std::int64_t expert_ffn = 0;         // inner width of one routed expert
  std::int64_t shared_experts = 0;     // experts every token uses (0 = none)
  std::int64_t shared_expert_ffn = 0;  // inner width of one shared expert
  std::int64_t first_dense_layers = 0; // leading blocks with the dense MLP (model.ffn)
  RouterKind router = RouterKind::Softmax;
  double capacity_factor = 0;          // tokens per expert capped at cf * tokens * top_k / experts;
                                       // 0 = dropless (no cap, no padding)
  // Tokens of the busiest expert (and of the busiest expert-parallel rank) over the mean,
  // for dropless routing: the busiest rank sets the time of the expert GEMMs and of the
  // all-to-all. Not an architecture fact and not published per model: a visible,
  // user-changeable planning parameter (YAML moe.load_imbalance). Default 1.0 = balanced
  // routing, the target of the load-balancing loss (Mixtral, Qwen) or bias (DeepSeek-V3).
  // With a capacity factor the cap sets the padded expert size instead.
  double load_imbalance = 1.0;
  // Group-limited routing (DeepSeek-V2 / V3 n_group, topk_group; Megatron-LM
  // --moe-router-num-groups, --moe-router-group-topk): the experts form `groups` equal
  // contiguous groups and a token's top_k experts come from at most max_groups_per_token of
  // them. With one group per node of the expert-parallel group it is DeepSeek-V3's
  // node-limited routing (at most 4 nodes per token). 0 = no limit. Changes no FLOPs; it
  // bounds the nodes a token's copies reach (costmodel/expert_dispatch_cost.h).
  std::int64_t groups = 0;
  std::int64_t max_groups_per_token = 0;
  // Period of the MoE blocks: block l (1-based) past first_dense_layers is MoE when
  // l % layer_step == 0, the others keep the dense MLP of model.ffn. 1 = every block.
  // This is Hugging Face's rule for Llama-4 (huggingface/transformers
  // src/transformers/models/llama4/configuration_llama4.py at 008e5743: moe_layers defaults
  // to range(interleave_moe_layer_step - 1, num_hidden_layers, interleave_moe_layer_step),
  // 0-based; modeling_llama4.py at 000c33fd: a layer in moe_layers gets the MoE MLP, any
  // other the dense MLP of intermediate_size_mlp) and Qwen-MoE's decoder_sparse_step
  // ((index + 1) % step == 0), as TorchTitan's llama4 interleave_moe_layer_step (v0.2.2) and
  // Megatron-DeepSpeed's --expert-interval (export/export_deepspeed.cpp). Megatron-LM's integer --moe-layer-freq N is NOT the same
  // rule: it makes 0-based layer i MoE when i % N == 0, the first layer included
  // (megatron/core/models/gpt/gpt_layer_specs.py at d98e8a64), so the Megatron export
  // writes the layout as its list form (export/export_megatron.cpp).
  std::int64_t layer_step = 1;
  bool group_limited() const { return groups > 1 && max_groups_per_token > 0 && max_groups_per_token < groups; }
  bool operator==(const MoeSpec&) const = default;
};

const char* to_string(RouterKind r);

}  // namespace strata::models
