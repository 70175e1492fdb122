// VocabParallelEmbedding: token embedding table wte (V, C) split by vocabulary rows over
// the tensor-parallel group (each rank looks up the tokens in its rows, zeros elsewhere,
// and the partial rows leave through tp::exit_row_*: all-reduce, or reduce-scatter to the
// sequence-parallel shard), plus learned positions wpe (S, C) when the model has them.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/model_dims.h"
#include "runtime/param_spec.h"
#include "runtime/parameter_store.h"
#include "runtime/tp_regions.h"

namespace strata::runtime {

// The spec of the (vocab-sharded) token embedding "embedding.wte"; the tied LM head
// registers the same spec.
ParamSpec word_embedding_spec(const ModelDims& d);

template <typename T>
class VocabParallelEmbedding {
 public:
  static std::vector<ParamSpec> param_specs(const ModelDims& d);
  VocabParallelEmbedding(const ModelDims& d, ParameterStore<T>& store, const TpGroup& tp);

  // x (Nl, C) = wte[tokens] + wpe[position]; tokens (B*S) of the micro-batch.
  void forward(T* x, const std::int32_t* tokens) const;
  // Accumulates dwte (this rank's rows) and dwpe from dx (Nl, C).
  void backward(const T* dx, const std::int32_t* tokens) const;

 private:
  ModelDims d_;
  TpGroup tp_;
  const T* wte_;
  T* dwte_;
  const T* wpe_ = nullptr;
  T* dwpe_ = nullptr;
};

}  // namespace strata::runtime
