#include "runtime/moe_router.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/errors.h"

namespace strata::runtime {

namespace {

template <typename T>
T sigmoid(T z) {
  return T(1) / (T(1) + std::exp(-z));
}

}  // namespace

template <typename T>
Routing<T> route_tokens(models::RouterKind kind, const T* logits, std::size_t tokens,
                        std::size_t experts, std::size_t top_k) {
  STRATA_CHECK(top_k >= 1 && top_k <= experts, "top_k {} of {} experts", top_k, experts);
  Routing<T> r;
  r.tokens = tokens;
  r.top_k = top_k;
  r.expert.resize(tokens * top_k);
  r.weight.resize(tokens * top_k);
  std::vector<std::int32_t> order(experts);
  for (std::size_t n = 0; n < tokens; ++n) {
    const T* z = logits + n * experts;
    std::iota(order.begin(), order.end(), 0);
    // softmax and sigmoid are monotonic: the top-k probabilities are the top-k logits.
    std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) { return z[a] > z[b]; });
    T* w = r.weight.data() + n * top_k;
    std::int32_t* e = r.expert.data() + n * top_k;
    T sum = 0;
    for (std::size_t j = 0; j < top_k; ++j) {
      e[j] = order[j];
      // softmax renormalised over the kept experts = softmax over their logits (the
      // largest logit subtracted for range)
      w[j] = kind == models::RouterKind::Softmax ? std::exp(z[order[j]] - z[order[0]]) : sigmoid(z[order[j]]);
      sum += w[j];
    }
    for (std::size_t j = 0; j < top_k; ++j) w[j] /= sum;
  }
  return r;
}

template <typename T>
void route_tokens_backward(models::RouterKind kind, T* dlogits, const T* dweight, const T* logits,
                           const Routing<T>& routing, std::size_t experts) {
  const std::size_t k = routing.top_k;
  std::fill_n(dlogits, routing.tokens * experts, T(0));
  for (std::size_t n = 0; n < routing.tokens; ++n) {
    const T* w = routing.weight.data() + n * k;
    const T* dw = dweight + n * k;
    const std::int32_t* e = routing.expert.data() + n * k;
    T* dz = dlogits + n * experts;
    T dot = 0;  // sum_i w_i dw_i
    for (std::size_t j = 0; j < k; ++j) dot += w[j] * dw[j];
    if (kind == models::RouterKind::Softmax) {
      // w = softmax over the kept logits: dz_j = w_j (dw_j - sum_i w_i dw_i)
      for (std::size_t j = 0; j < k; ++j) dz[e[j]] = w[j] * (dw[j] - dot);
    } else {
      // w_j = s_j / S, S = sum of kept s: ds_j = (dw_j - sum_i w_i dw_i) / S;
      // dz_j = ds_j s_j (1 - s_j), with s_j = w_j S.
      T S = 0;
      for (std::size_t j = 0; j < k; ++j) S += sigmoid(logits[n * experts + static_cast<std::size_t>(e[j])]);
      for (std::size_t j = 0; j < k; ++j) {
        const T s = sigmoid(logits[n * experts + static_cast<std::size_t>(e[j])]);
        dz[e[j]] = (dw[j] - dot) / S * s * (T(1) - s);
      }
    }
  }
}

template struct Routing<float>;
template struct Routing<double>;
template Routing<float> route_tokens(models::RouterKind, const float*, std::size_t, std::size_t, std::size_t);
template Routing<double> route_tokens(models::RouterKind, const double*, std::size_t, std::size_t, std::size_t);
template void route_tokens_backward(models::RouterKind, float*, const float*, const float*,
                                    const Routing<float>&, std::size_t);
template void route_tokens_backward(models::RouterKind, double*, const double*, const double*,
                                    const Routing<double>&, std::size_t);

}  // namespace strata::runtime
