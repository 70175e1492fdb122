// ModelGraph: a Boost.Graph DAG of ops for one micro-batch, grouped into layers
// for pipeline partitioning: group 0 = embedding, 1..L = transformer blocks,
// L+1 = final norm, LM head and loss. Edges follow the data flow, residual stream
// included. Vertex ids are assigned in a topological order.
//
// A block (pre-norm, Megatron/Llama order):
//   x -> norm1 -> qkv [-> rope] -> attention_core -> out_proj -> residual1 (x + .)
//     -> norm2 -> mlp_up [, mlp_gate] -> activation -> mlp_down -> residual2 (residual1 + .)
// Activation bytes per op hold these Korthikanti et al. 2022 (Table 2) terms, 2-byte
// activations, 1-byte dropout masks (b sequences of s tokens, f = ffn, kv = kv_dim):
//   norm1 / norm2        2sbh each   (the norm's input)
//   qkv                  2sbh        (its input, the norm's output)
//   attention_core       2sbh (Q) + 4sb*kv (K, V) + 2as^2b (softmax out)
//                        + as^2b (dropout mask) + 2as^2b (dropout out) = 6sbh + 5as^2b (MHA)
//   out_proj             2sbh        (its input)
//   residual1/residual2  sbh each    (dropout mask)
//   mlp_up               2sbh        (its input; mlp_gate shares it and holds 0)
//   activation           gelu: 2sbf (its input, 8sbh at f=4h); swiglu: 4sbf (gate and up outputs)
//   mlp_down             2sbf        (its input, 8sbh at f=4h)
// which sums to s*b*h*(34 + 5as/h) for a GPT block. Q, K, V and the output-projection
// input use their own widths where head_dim is not hidden/heads.
//
// Multi-head latent attention replaces qkv by q_down -> q_norm -> q_up (or one q_proj
// without query compression) and kv_down -> kv_norm -> kv_up; the down projections and
// latent norms are replicated across TP, the up projections column-parallel.
// A mixture-of-experts layer replaces the MLP by router -> [shared_up, shared_gate,
// shared_activation, shared_down] and expert_up, expert_gate, expert_activation,
// expert_down: grouped GEMMs (Op::gemm_count, one per routed expert) over the mean
// tokens per expert, with the token dispatch before expert_up and the combine after
// expert_down (Op::ep_comm). Activation terms: router input 2sbh and fp32 probabilities
// 4sbE; per routed token copy its permuted input 2h, the expert activations and the
// expert output 2h kept for the routing-weight gradient (models/model_stats.h). SwiGLU keeps the same terms with
// the wider activation input; dropout masks are kept for Llama too (a conservative
// upper bound; Llama trains without dropout). Group 0 holds the embedding dropout
// mask (sbh); group L+1 the final norm input (2sbh), the LM head input (2sbh) and the
// fp32 logits kept for the cross-entropy backward (4sbV).
#pragma once
#include <cstdint>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "models/model_spec.h"
#include "models/op.h"

namespace strata::models {

using OpGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Op>;

struct LayerGroup {
  int index = 0;
  std::vector<std::size_t> ops;   // vertex ids, topological order
  double params = 0;
  double active_params = 0;       // parameters one token uses (MoE: top_k of the routed experts)
  double flops_fwd = 0;
  double flops_bwd = 0;
  double activation_bytes = 0;    // saved for backward, unsharded, one micro-batch
  double selective_recompute_bytes = 0;  // part of activation_bytes selective recompute drops
  double shared_params = 0;       // tied weights this group uses but does not own (LM head)
  double bytes_fwd = 0;           // memory traffic, 2-byte dtype
  double bytes_bwd = 0;
  bool operator==(const LayerGroup&) const = default;
};

class ModelGraph {
 public:
  // Builds GPT (gelu/layernorm/learned) or Llama (swiglu/rmsnorm/rope) blocks.
  // InputError when micro_batch <= 0 or micro_batch*seq_len overflows. Memory grows
  // with layers (about 12 ops per block).
  static ModelGraph build(const ModelSpec& spec, std::int64_t micro_batch);

  const ModelSpec& spec() const { return spec_; }
  std::int64_t micro_batch() const { return micro_batch_; }
  const OpGraph& graph() const { return graph_; }
  const Op& op(std::size_t v) const { return graph_[v]; }
  std::size_t num_ops() const { return boost::num_vertices(graph_); }
  const std::vector<LayerGroup>& groups() const { return groups_; }  // size L+2
  std::vector<std::size_t> topological_order() const;

  double total_params() const;      // counts tied embeddings once
  double active_params() const;     // what one token uses (= total_params for dense models)
  double total_flops_fwd() const;
  double total_flops_bwd() const;

 private:
  ModelSpec spec_;
  std::int64_t micro_batch_ = 1;
  OpGraph graph_;
  std::vector<LayerGroup> groups_;
};

}  // namespace strata::models
