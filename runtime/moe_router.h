// MoE router: each token's top-k experts and their combine weights from the router
// logits (N, E) = x (N, C) Wr^T (Wr (E, C), no bias).
//
//   softmax (Mixtral, Qwen-MoE with norm_topk_prob): p = softmax(logits); keep the k
//     largest; weights = p_top / sum(p_top), which is the softmax over the k kept logits.
//   sigmoid (DeepSeek-V3): s = sigmoid(logits); keep the k largest; weights = s_top /
//     sum(s_top). DeepSeek-V3's selection bias and routed_scaling_factor are not modelled.
//
// Ties pick the lower expert index. Every token goes to its k experts unless the model sets
// a capacity factor (runtime/expert_capacity.h drops slots after this routing). No
// auxiliary load-balancing loss (the runtime trains without one).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/moe_spec.h"

namespace strata::runtime {

// A micro-batch's routing: token n's slot j (0..k-1) goes to expert[n*k + j] with
// combine weight weight[n*k + j]; slots in decreasing router score.
template <typename T>
struct Routing {
  std::size_t tokens = 0, top_k = 0;
  std::vector<std::int32_t> expert;  // (N, k)
  std::vector<T> weight;             // (N, k)
};

// Routing of N tokens from logits (N, E).
template <typename T>
Routing<T> route_tokens(models::RouterKind kind, const T* logits, std::size_t tokens,
                        std::size_t experts, std::size_t top_k);

// dlogits (N, E) (overwritten) from the gradient of the combine weights dweight (N, k):
// through the renormalised top-k probabilities; zero for the experts not chosen.
template <typename T>
void route_tokens_backward(models::RouterKind kind, T* dlogits, const T* dweight, const T* logits,
                           const Routing<T>& routing, std::size_t experts);

}  // namespace strata::runtime
