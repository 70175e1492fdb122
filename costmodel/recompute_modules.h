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
// And one policy that is not Megatron's:
//   per_op         TorchTitan's per-op selective activation checkpointing
//                  (--activation_checkpoint.mode selective, selective_ac_option "op";
//                  torchtitan/parallelisms/parallelize_llama.py _apply_ac_to_transformer_block
//                  at 9dec370): each block is checkpointed, and the outputs of aten.mm (except
//                  every second mm of the block: wk, wo and w3 in Llama's order) and of the
//                  SDPA kernel are kept; the rest (norms, RoPE, the K/V repeat, SiLU * mul,
//                  residual adds, the three skipped mms) re-runs in the backward. A dense
//                  block keeps its input, Q, V, the attention output and its statistics, the
//                  w1 and w2 outputs (memory_model.h); it stands alone in the list.
// Used with RecomputeMode::Selective; none set = {core_attn}, strata's selective mode, unless
// the stack names its own (SoftwareStack::selective_recompute).
struct RecomputeModules {
  bool layernorm = false, mla_up_proj = false, core_attn = false, mlp = false, moe = false,
       moe_act = false, shared_experts = false, per_op = false;
  bool megatron() const {  // any of Megatron-Core's modules
    return layernorm || mla_up_proj || core_attn || mlp || moe || moe_act || shared_experts;
  }
  bool any() const { return megatron() || per_op; }
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
    {"shared_experts", &RecomputeModules::shared_experts}, {"per_op", &RecomputeModules::per_op}};
}  // namespace detail

// Megatron's names ("layernorm", "mla_up_proj", "core_attn", "mlp", "moe", "moe_act",
// "shared_experts") and TorchTitan's "per_op"; InputError naming an unknown one. Header-only: the plan files
// (strata_plan) read and write them without linking the cost model.
inline RecomputeModules recompute_modules_from_names(const std::vector<std::string>& names) {
  RecomputeModules m;
  for (const std::string& n : names) {
    bool known = false;
    for (const auto& k : detail::kRecomputeModules)
      if (n == k.name) m.*k.flag = known = true;
    if (!known)
      input_error("recompute module '{}' is not one of: layernorm, mla_up_proj, core_attn, mlp, moe, moe_act, "
                  "shared_experts (Megatron-Core recompute_modules), per_op (TorchTitan's per-op selective AC)",
                  n);
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
