// GemmProblem: one GEMM shape to measure, and where the shapes come from: the GEMMs a
// model's layers run under each tensor-parallel degree (forward, dgrad and wgrad of
// every sharded linear layer), and a square size sweep.
//
// For a linear layer Y(m,n) = X(m,k) W(k,n) with m = micro_batch * seq tokens:
//   forward  Y  = X  W     -> (m, n, k)
//   dgrad    dX = dY W^T   -> (m, k, n)
//   wgrad    dW = X^T dY   -> (k, n, m)
// sharded per Megatron: column-parallel (QKV, MLP up/gate) and vocab-parallel (LM head)
// split n by tp; row-parallel (out-proj, MLP down) split k by tp. A split that does not
// divide rounds up (Megatron pads the vocabulary).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata::models {
class ModelGraph;
}

namespace strata::kernels::profiler {

struct GemmProblem {
  std::int64_t m = 0, n = 0, k = 0;
  std::string origin;  // "gpt2-124m qkv fwd tp2; ..." or "square"
  bool operator<(const GemmProblem& o) const;
};

// The sharded forward/dgrad/wgrad GEMMs of every GEMM op of `graph` for each tp in
// `tp_degrees` (tp values that do not divide the model's heads and kv_heads are skipped).
// Routed experts are left to expert_gemm_problems (their shape depends on ep and etp).
std::vector<GemmProblem> model_gemm_problems(const models::ModelGraph& graph,
                                             const std::vector<int>& tp_degrees);
// The per-head GEMMs of the attention core, a proxy for its efficiency (softmax not
// included): scores S(s,s) = Q(s,d) K^T(d,s) -> (s, s, d), and O(s,d) = P(s,s) V(s,d)
// -> (s, d, s), with s = seq_len and d = head_dim. The same for every tp (tp splits heads).
std::vector<GemmProblem> attention_gemm_problems(const models::ModelGraph& graph);
// The routed experts' GEMMs (forward, dgrad, wgrad of one expert) at the per-expert token
// counts expert layouts give: m = m0 * ep * etp / tp, with m0 the tokens each expert gets
// unsharded (graph op gemm.m) and tokens gathered over ep and etp after sequence-parallel
// tp split them (costmodel/expert_dispatch_cost.h expert_gemm_shape). ep runs over the
// powers of two up to the expert count, tp and etp over `tp_degrees`; the column-parallel
// up/gate split n by etp, the row-parallel down k. Empty for a model without experts.
std::vector<GemmProblem> expert_gemm_problems(const models::ModelGraph& graph,
                                              const std::vector<int>& tp_degrees);
// tp values of `tp_degrees` the model supports (heads and kv_heads divisible by tp).
std::vector<int> usable_tp_degrees(const models::ModelGraph& graph, const std::vector<int>& tp_degrees);
// Square (d, d, d) for d = min_dim, 2*min_dim, ... <= max_dim.
std::vector<GemmProblem> square_gemm_problems(std::int64_t min_dim, std::int64_t max_dim);
// One problem per distinct (m, n, k), origins joined, sorted by FLOPs then shape.
std::vector<GemmProblem> dedupe_gemm_problems(std::vector<GemmProblem> problems);

}  // namespace strata::kernels::profiler
