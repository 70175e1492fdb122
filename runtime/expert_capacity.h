// Token dropping with an expert capacity (a model's moe.capacity_factor), as Megatron-Core
// applies it in the router (megatron/core/transformer/moe/moe_utils.py get_capacity and
// apply_router_token_dropping, NVIDIA/Megatron-LM at
// d98e8a64ddf34856e74b24714e3bedb2f5a39553; --moe-expert-capacity-factor with the default
// --moe-token-drop-policy probs; --moe-pad-expert-input-to-capacity, which strata's exports
// write, only adds rows of routing weight zero, so the numbers are the same):
//   capacity = ceil((tokens * top_k / experts) * capacity_factor), over the tokens this
//   rank routes (its sequence-parallel / context-parallel share of the micro-batch);
//   each expert keeps the `capacity` of its assignments with the largest routing weight and
//   drops the rest: a dropped (token, slot) contributes nothing (its weight is masked, the
//   kept weights are not renormalised). Nothing is dropped when capacity > tokens.
// Ties (equal weights) keep the lower token index (torch.topk leaves them unspecified).
// Because the capacity is taken per routing rank, layouts that split a micro-batch's
// tokens differently (tp with sequence parallelism, cp, another micro-batch size) drop
// differently, in Megatron-Core as here.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/moe_router.h"

namespace strata::runtime {

std::size_t expert_capacity(std::size_t tokens, std::size_t top_k, std::size_t experts, double capacity_factor);

// The routing's expert per (token, slot), -1 where the slot is dropped. capacity_factor 0:
// dropless (the experts as routed).
template <typename T>
std::vector<std::int32_t> kept_experts(const Routing<T>& routing, std::size_t experts, double capacity_factor);

}  // namespace strata::runtime
