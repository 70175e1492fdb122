#include "runtime/expert_capacity.h"

#include <algorithm>
#include <cmath>

namespace strata::runtime {

std::size_t expert_capacity(std::size_t tokens, std::size_t top_k, std::size_t experts, double capacity_factor) {
  // Megatron's order of operations: (num_tokens / num_experts) * capacity_factor.
  return static_cast<std::size_t>(
      std::ceil(static_cast<double>(tokens * top_k) / static_cast<double>(experts) * capacity_factor));
}

template <typename T>
std::vector<std::int32_t> kept_experts(const Routing<T>& r, std::size_t experts, double capacity_factor) {
  std::vector<std::int32_t> out = r.expert;
  if (capacity_factor <= 0) return out;
  const std::size_t capacity = expert_capacity(r.tokens, r.top_k, experts, capacity_factor);
  if (capacity > r.tokens) return out;
  // Slots by expert, in token order; each expert keeps its `capacity` largest weights.
  std::vector<std::vector<std::size_t>> slots(experts);
  for (std::size_t i = 0; i < out.size(); ++i) slots[static_cast<std::size_t>(out[i])].push_back(i);
  for (auto& s : slots) {
    if (s.size() <= capacity) continue;
    std::stable_sort(s.begin(), s.end(), [&](std::size_t a, std::size_t b) { return r.weight[a] > r.weight[b]; });
    for (std::size_t i = capacity; i < s.size(); ++i) out[s[i]] = -1;
  }
  return out;
}

template std::vector<std::int32_t> kept_experts(const Routing<float>&, std::size_t, double);
template std::vector<std::int32_t> kept_experts(const Routing<double>&, std::size_t, double);

}  // namespace strata::runtime
