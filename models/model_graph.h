// ModelGraph: a Boost.Graph DAG of ops for one micro-batch, grouped into layers
// for pipeline partitioning: group 0 = embedding, 1..L = transformer blocks,
// L+1 = final norm, LM head and loss.
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
  double flops_fwd = 0;
  double flops_bwd = 0;
  double activation_bytes = 0;    // saved for backward, unsharded, one micro-batch
};

class ModelGraph {
 public:
  // Builds GPT (gelu/layernorm/learned) or Llama (swiglu/rmsnorm/rope) blocks.
  static ModelGraph build(const ModelSpec& spec, std::int64_t micro_batch);

  const ModelSpec& spec() const { return spec_; }
  std::int64_t micro_batch() const { return micro_batch_; }
  const OpGraph& graph() const { return graph_; }
  const Op& op(std::size_t v) const { return graph_[v]; }
  std::size_t num_ops() const { return boost::num_vertices(graph_); }
  const std::vector<LayerGroup>& groups() const { return groups_; }  // size L+2
  std::vector<std::size_t> topological_order() const;

  double total_params() const;      // counts tied embeddings once
  double total_flops_fwd() const;
  double total_flops_bwd() const;

 private:
  ModelSpec spec_;
  std::int64_t micro_batch_ = 1;
  OpGraph graph_;
  std::vector<LayerGroup> groups_;
};

}  // namespace strata::models
