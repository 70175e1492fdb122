// RecomputeModules: Megatron-Core's selective recompute by submodule, what each drops from the
// saved activations (costmodel/memory_model.h) and re-runs in the backward (the planner's
// stage times).
#pragma once
#include <string>
#include <vector>

#include "common/errors.h"

namespace strata::costmodel {

// Megatron-Core selective recompute by submodule (TransformerConfig.recompute_modules,
// NVIDIA/Megatron-LM megatron/core/transformer/transformer_config.py; --recompute-modules).
// What each drops from a layer's saved activations (the terms of layer_activation_bytes):
//   layernorm      (output-discarding) both norms' outputs, the QKV and MLP inputs: 4sbh
//   mla_up_proj    (output-discarding) the per-head Q, K, V of the MLA up projections and
//                  RoPE: 2sb(2 heads qk_head_dim + heads v_head_dim)
//   core_attn      the attention scores (score_bytes a s^2 b; Megatron's default list)
//   mlp            a dense MLP's terms (its input stays: normal checkpointing keeps it)
//   moe            an MoE layer's MLP terms: router probabilities, routed copies and their
//                  expert activations, shared experts
//   moe_act        the routed experts' activation output (2 expert_ffn per copy)
//   shared_experts the shared experts' terms
// Used with RecomputeMode::Selective; none set = {core_attn}, strata's selective mode.
struct RecomputeModules {
  bool layernorm = false, mla_up_proj = false, core_attn = false, mlp = false, moe = false,
       moe_act = false, shared_experts = false;
  bool any() const { return layernorm || mla_up_proj || core_attn || mlp || moe || moe_act || shared_experts; }
  bool operator==(const RecomputeModules&) const = default;
};


namespace detail {
struct NamedRecomputeModule {
  const char* name;
  bool RecomputeModules::*flag;
};
inline constexpr NamedRecomputeModule kRecomputeModules[] = {
    {"layernorm", &RecomputeModules::layernorm}, {"mla_up_proj", &RecomputeModules::mla_up_proj},
    {"core_attn", &RecomputeModules::core_attn}, {"mlp", &RecomputeModules::mlp},
    {"moe", &RecomputeModules::moe},             {"moe_act", &RecomputeModules::moe_act},
    {"shared_experts", &RecomputeModules::shared_experts}};
}  // namespace detail

// Megatron's names ("layernorm", "mla_up_proj", "core_attn", "mlp", "moe", "moe_act",
// "shared_experts"); InputError naming an unknown one. Header-only: the plan files
// (strata_plan) read and write them without linking the cost model.
inline RecomputeModules recompute_modules_from_names(const std::vector<std::string>& names) {
  RecomputeModules m;
  for (const std::string& n : names) {
    bool known = false;
    for (const auto& k : detail::kRecomputeModules)
      if (n == k.name) m.*k.flag = known = true;
    if (!known)
      input_error("recompute module '{}' is not one of: layernorm, mla_up_proj, core_attn, mlp, moe, moe_act, "
                  "shared_experts (Megatron-Core recompute_modules)", n);
  }
  return m;
}

inline std::vector<std::string> recompute_module_names(const RecomputeModules& m) {
  std::vector<std::string> out;
  for (const auto& k : detail::kRecomputeModules)
    if (m.*k.flag) out.emplace_back(k.name);
  return out;
}

}  // namespace strata::costmodel
