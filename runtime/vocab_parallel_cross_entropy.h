// Vocab-parallel softmax cross-entropy (Megatron): each tensor-parallel rank holds the
// logits of its vocabulary rows [vocab_begin, vocab_begin + Vl) for all N tokens; the
// row max is combined by an all-gather of the local maxima, the sum of exponentials and
// the target logit by one all-reduce, so no rank ever holds the full (N, V) logits.
#pragma once
#include <cstddef>
#include <cstdint>

#include "runtime/tp_regions.h"

namespace strata::runtime {

// logits (N, Vl) are replaced by the softmax probabilities (over the whole vocabulary);
// losses (N) receive -log p(target).
template <typename T>
void vocab_parallel_cross_entropy_forward(const TpGroup& g, T* logits, T* losses,
                                          const std::int32_t* targets, std::size_t n_rows,
                                          std::size_t vocab_local, std::int64_t vocab_begin);

// dlogits (N, Vl) = (probs - onehot(target)) * dloss, dloss the gradient of each token's
// loss (the same for every token: 1 / tokens of the global batch).
template <typename T>
void vocab_parallel_cross_entropy_backward(T* dlogits, const T* probs, const std::int32_t* targets,
                                           T dloss, std::size_t n_rows, std::size_t vocab_local,
                                           std::int64_t vocab_begin);

}  // namespace strata::runtime
