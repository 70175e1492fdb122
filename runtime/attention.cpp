#include "runtime/attention.h"
#include "runtime/fast_math.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/matmul.h"

namespace strata::runtime {

template <typename T>
void split_heads_forward(T* q, T* k, T* v, const T* qkv, const AttentionShape& s) {
  const std::size_t D = s.head_dim, W = s.qkv_width();
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t t = 0; t < s.seq; ++t) {
      const T* row = qkv + (b * s.seq + t) * W;
      for (std::size_t h = 0; h < s.heads; ++h)
        std::copy_n(row + h * D, D, q + ((b * s.heads + h) * s.seq + t) * D);
      for (std::size_t h = 0; h < s.kv_heads; ++h) {
        std::copy_n(row + s.q_width() + h * D, D, k + ((b * s.kv_heads + h) * s.seq + t) * D);
        std::copy_n(row + s.q_width() + s.kv_width() + h * D, D,
                    v + ((b * s.kv_heads + h) * s.seq + t) * D);
      }
    }
}

template <typename T>
void split_heads_backward(T* dqkv, const T* dq, const T* dk, const T* dv, const AttentionShape& s) {
  const std::size_t D = s.head_dim, W = s.qkv_width();
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t t = 0; t < s.seq; ++t) {
      T* row = dqkv + (b * s.seq + t) * W;
      for (std::size_t h = 0; h < s.heads; ++h)
        std::copy_n(dq + ((b * s.heads + h) * s.seq + t) * D, D, row + h * D);
      for (std::size_t h = 0; h < s.kv_heads; ++h) {
        std::copy_n(dk + ((b * s.kv_heads + h) * s.seq + t) * D, D, row + s.q_width() + h * D);
        std::copy_n(dv + ((b * s.kv_heads + h) * s.seq + t) * D, D,
                    row + s.q_width() + s.kv_width() + h * D);
      }
    }
}

template <typename T>
void merge_heads_forward(T* y, const T* o, const AttentionShape& s) {
  const std::size_t D = s.head_dim;
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t t = 0; t < s.seq; ++t)
      for (std::size_t h = 0; h < s.heads; ++h)
        std::copy_n(o + ((b * s.heads + h) * s.seq + t) * D, D,
                    y + (b * s.seq + t) * s.q_width() + h * D);
}

template <typename T>
void merge_heads_backward(T* d_o, const T* dy, const AttentionShape& s) {
  const std::size_t D = s.head_dim;
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t t = 0; t < s.seq; ++t)
      for (std::size_t h = 0; h < s.heads; ++h)
        std::copy_n(dy + (b * s.seq + t) * s.q_width() + h * D, D,
                    d_o + ((b * s.heads + h) * s.seq + t) * D);
}

namespace {

// p (Sq, Sk) = causal softmax(scale * q k^T) for one (batch, head): row i keeps keys
// 0..s.limit(i).
template <typename T>
void head_probs(T* p, const T* qh, const T* kh, const AttentionShape& s, T scale) {
  const std::size_t Sq = s.seq, Sk = s.keys(), D = s.head_dim;
  gemm<T>(false, true, Sq, Sk, D, scale, qh, kh, T(0), p);
  for (std::size_t i = 0; i < Sq; ++i) {
    T* row = p + i * Sk;
    const std::size_t last = s.limit(i);
    T mx = -std::numeric_limits<T>::infinity();
    for (std::size_t j = 0; j <= last; ++j) mx = std::max(mx, row[j]);
    for (std::size_t j = 0; j <= last; ++j) row[j] = fast_exp(row[j] - mx);  // vectorized
    T sum = 0;
    for (std::size_t j = 0; j <= last; ++j) sum += row[j];
    const T inv = T(1) / sum;
    for (std::size_t j = 0; j <= last; ++j) row[j] *= inv;
    for (std::size_t j = last + 1; j < Sk; ++j) row[j] = T(0);
  }
}

}  // namespace

template <typename T>
void attention_forward(T* o, T* probs, const T* q, const T* k, const T* v, const AttentionShape& s) {
  const std::size_t S = s.seq, Sk = s.keys(), D = s.head_dim, group = s.heads / s.kv_heads;
  const T scale = T(1) / std::sqrt(static_cast<T>(D));
  std::vector<T> scratch(probs == nullptr ? S * Sk : 0);
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.heads; ++h) {
      const std::size_t kvh = h / group;
      const T* qh = q + (b * s.heads + h) * S * D;
      const T* kh = k + (b * s.kv_heads + kvh) * Sk * D;
      const T* vh = v + (b * s.kv_heads + kvh) * Sk * D;
      T* p = probs != nullptr ? probs + (b * s.heads + h) * S * Sk : scratch.data();
      head_probs(p, qh, kh, s, scale);
      gemm<T>(false, false, S, D, Sk, T(1), p, vh, T(0), o + (b * s.heads + h) * S * D);
    }
}

template <typename T>
void attention_backward(T* dq, T* dk, T* dv, const T* d_o, const T* probs, const T* q, const T* k,
                        const T* v, const AttentionShape& s) {
  const std::size_t S = s.seq, Sk = s.keys(), D = s.head_dim, group = s.heads / s.kv_heads;
  const T scale = T(1) / std::sqrt(static_cast<T>(D));
  std::fill_n(dk, s.batch * s.kv_heads * Sk * D, T(0));
  std::fill_n(dv, s.batch * s.kv_heads * Sk * D, T(0));
  std::vector<T> p_scratch(probs == nullptr ? S * Sk : 0), dp(S * Sk);
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.heads; ++h) {
      const std::size_t kvh = h / group;
      const T* qh = q + (b * s.heads + h) * S * D;
      const T* kh = k + (b * s.kv_heads + kvh) * Sk * D;
      const T* vh = v + (b * s.kv_heads + kvh) * Sk * D;
      const T* doh = d_o + (b * s.heads + h) * S * D;
      T* dqh = dq + (b * s.heads + h) * S * D;
      T* dkh = dk + (b * s.kv_heads + kvh) * Sk * D;
      T* dvh = dv + (b * s.kv_heads + kvh) * Sk * D;
      const T* p = probs;
      if (probs == nullptr) {  // selective recompute: rebuild the probabilities
        head_probs(p_scratch.data(), qh, kh, s, scale);
        p = p_scratch.data();
      } else {
        p = probs + (b * s.heads + h) * S * Sk;
      }
      // dP (S,Sk) = dO V^T ; dV += P^T dO
      gemm<T>(false, true, S, Sk, D, T(1), doh, vh, T(0), dp.data());
      gemm<T>(true, false, Sk, D, S, T(1), p, doh, T(1), dvh);
      // dScores = P * (dP - rowsum(P * dP)); masked entries have P = 0
      for (std::size_t i = 0; i < S; ++i) {
        const T* pr = p + i * Sk;
        T* dpr = dp.data() + i * Sk;
        const std::size_t last = s.limit(i);
        T dot = 0;
        for (std::size_t j = 0; j <= last; ++j) dot += pr[j] * dpr[j];
        for (std::size_t j = 0; j <= last; ++j) dpr[j] = pr[j] * (dpr[j] - dot);
        for (std::size_t j = last + 1; j < Sk; ++j) dpr[j] = T(0);
      }
      // dQ = scale dS K ; dK += scale dS^T Q
      gemm<T>(false, false, S, D, Sk, scale, dp.data(), kh, T(0), dqh);
      gemm<T>(true, false, Sk, D, S, scale, dp.data(), qh, T(1), dkh);
    }
}

#define STRATA_INSTANTIATE(T)                                                                   \
  template void split_heads_forward<T>(T*, T*, T*, const T*, const AttentionShape&);            \
  template void split_heads_backward<T>(T*, const T*, const T*, const T*, const AttentionShape&); \
  template void merge_heads_forward<T>(T*, const T*, const AttentionShape&);                    \
  template void merge_heads_backward<T>(T*, const T*, const AttentionShape&);                   \
  template void attention_forward<T>(T*, T*, const T*, const T*, const T*, const AttentionShape&); \
  template void attention_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*,       \
                                      const T*, const AttentionShape&);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

}  // namespace strata::runtime
