#include "runtime/vocab_parallel_cross_entropy.h"
#include "runtime/fast_math.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace strata::runtime {

template <typename T>
void vocab_parallel_cross_entropy_forward(const TpGroup& g, T* logits, T* losses,
                                          const std::int32_t* targets, std::size_t n_rows,
                                          std::size_t vocab_local, std::int64_t vocab_begin) {
  const std::size_t N = n_rows, V = vocab_local;
  // Row maxima: local, then the max over the TP group (all-gather of N per rank).
  std::vector<T> local_max(N, -std::numeric_limits<T>::infinity());
  for (std::size_t r = 0; r < N; ++r)
    for (std::size_t j = 0; j < V; ++j) local_max[r] = std::max(local_max[r], logits[r * V + j]);
  std::vector<T> all_max(N * static_cast<std::size_t>(g.size));
  tp::all_gather(g, all_max.data(), local_max.data(), N);
  std::vector<T> row_max(N, -std::numeric_limits<T>::infinity());
  for (int t = 0; t < g.size; ++t)
    for (std::size_t r = 0; r < N; ++r)
      row_max[r] = std::max(row_max[r], all_max[static_cast<std::size_t>(t) * N + r]);
  // [sum_j exp(l - max) | target logit - max], summed over the TP group.
  std::vector<T> sums(2 * N, T(0));
  for (std::size_t r = 0; r < N; ++r) {
    T* row = logits + r * V;
    const std::int64_t col = targets[r] - vocab_begin;
    if (col >= 0 && col < static_cast<std::int64_t>(V))
      sums[N + r] = row[static_cast<std::size_t>(col)] - row_max[r];
    const T mx = row_max[r];
    for (std::size_t j = 0; j < V; ++j) row[j] = fast_exp(row[j] - mx);  // vectorized
    T s = 0;
    for (std::size_t j = 0; j < V; ++j) s += row[j];  // in order: no reassociation
    sums[r] = s;
  }
  tp::all_reduce_sum(g, sums.data(), 2 * N);
  for (std::size_t r = 0; r < N; ++r) {
    const T inv = T(1) / sums[r];
    T* row = logits + r * V;
    for (std::size_t j = 0; j < V; ++j) row[j] *= inv;
    losses[r] = std::log(sums[r]) - sums[N + r];
  }
}

template <typename T>
void vocab_parallel_cross_entropy_backward(T* dlogits, const T* probs, const std::int32_t* targets,
                                           T dloss, std::size_t n_rows, std::size_t vocab_local,
                                           std::int64_t vocab_begin) {
  const std::size_t V = vocab_local;
  for (std::size_t r = 0; r < n_rows; ++r) {
    for (std::size_t j = 0; j < V; ++j) dlogits[r * V + j] = probs[r * V + j] * dloss;
    const std::int64_t col = targets[r] - vocab_begin;
    if (col >= 0 && col < static_cast<std::int64_t>(V))
      dlogits[r * V + static_cast<std::size_t>(col)] -= dloss;
  }
}

template void vocab_parallel_cross_entropy_forward<float>(const TpGroup&, float*, float*,
                                                          const std::int32_t*, std::size_t,
                                                          std::size_t, std::int64_t);
template void vocab_parallel_cross_entropy_forward<double>(const TpGroup&, double*, double*,
                                                           const std::int32_t*, std::size_t,
                                                           std::size_t, std::int64_t);
template void vocab_parallel_cross_entropy_backward<float>(float*, const float*, const std::int32_t*,
                                                           float, std::size_t, std::size_t,
                                                           std::int64_t);
template void vocab_parallel_cross_entropy_backward<double>(double*, const double*,
                                                            const std::int32_t*, double, std::size_t,
                                                            std::size_t, std::int64_t);

}  // namespace strata::runtime
