// LanguageModelHead: final norm, vocab-parallel LM head (the tied embedding table
// "embedding.wte", or an untied "head.lm_head.weight", both (V, C) split by vocabulary
// rows) and vocab-parallel cross-entropy. With pipeline parallelism and tied embeddings
// the last stage holds a copy of the embedding shard whose gradient is all-reduced with
// the first stage's (Megatron's embedding group).
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/model_dims.h"
#include "runtime/param_spec.h"
#include "runtime/parameter_store.h"
#include "runtime/tp_regions.h"

namespace strata::runtime {

template <typename T>
struct HeadActivations {
  std::vector<T> x;                   // (Nl, C) head input
  std::vector<T> nf, nf_mean, nf_rstd;  // final norm
  std::vector<T> nf_full;             // (N, C) LM-head input
  std::vector<T> probs;               // (N, Vl) softmax over the full vocabulary
  std::vector<std::int32_t> targets;  // (N)
  T dloss = 0;                        // gradient of each token's loss
  void release() { *this = HeadActivations{}; }
};

template <typename T>
class LanguageModelHead {
 public:
  static std::vector<ParamSpec> param_specs(const ModelDims& d);
  LanguageModelHead(const ModelDims& d, ParameterStore<T>& store, const TpGroup& tp);

  // Returns sum over the micro-batch's tokens of loss * token_weight (token_weight =
  // 1 / tokens in the global batch, so the sum over all micro-batches and data-parallel
  // ranks is the mean loss). x (Nl, C), targets (N).
  double forward(const T* x, const std::int32_t* targets, T token_weight, HeadActivations<T>& acts) const;
  // dx (Nl, C) (overwritten); accumulates parameter gradients; releases `acts`.
  void backward(T* dx, HeadActivations<T>& acts) const;

 private:
  ModelDims d_;
  TpGroup tp_;
  const T *nf_w_, *nf_b_ = nullptr, *w_;
  T *dnf_w_, *dnf_b_ = nullptr, *dw_;
};

}  // namespace strata::runtime
