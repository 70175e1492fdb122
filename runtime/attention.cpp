#include "runtime/attention.h"
#include "runtime/fast_math.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/matmul.h"

namespace strata::runtime {

namespace {

// Every head's D-wide slice in the two attention layouts: token-major rows `width` wide
// holding `n_heads` heads from column `col0` on, and head-major [batch][head][seq][D].
// Calls f(row offset, head-major offset) for each (batch, position, head).
template <typename F>
void for_each_head_slice(const AttentionShape& s, std::size_t n_heads, std::size_t width, std::size_t col0,
                         F&& f) {
  const std::size_t D = s.head_dim;
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t t = 0; t < s.seq; ++t)
      for (std::size_t h = 0; h < n_heads; ++h)
        f((b * s.seq + t) * width + col0 + h * D, ((b * n_heads + h) * s.seq + t) * D);
}

template <typename T>
void copy_rows_to_heads(T* heads, const T* rows, const AttentionShape& s, std::size_t n_heads, std::size_t width,
                        std::size_t col0) {
  for_each_head_slice(s, n_heads, width, col0,
                      [&](std::size_t row, std::size_t head) { std::copy_n(rows + row, s.head_dim, heads + head); });
}

template <typename T>
void copy_heads_to_rows(T* rows, const T* heads, const AttentionShape& s, std::size_t n_heads, std::size_t width,
                        std::size_t col0) {
  for_each_head_slice(s, n_heads, width, col0,
                      [&](std::size_t row, std::size_t head) { std::copy_n(heads + head, s.head_dim, rows + row); });
}

// Calls f(bh, bkv) for every (batch, query head): the head's index in q / o / probs and
// its K/V head's in k / v (grouped-query: H / KV query heads share one K/V head).
template <typename F>
void for_each_query_head(const AttentionShape& s, F&& f) {
  const std::size_t group = s.heads / s.kv_heads;
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.heads; ++h) f(b * s.heads + h, b * s.kv_heads + h / group);
}

}  // namespace

template <typename T>
void split_heads_forward(T* q, T* k, T* v, const T* qkv, const AttentionShape& s) {
  const std::size_t W = s.qkv_width();
  copy_rows_to_heads(q, qkv, s, s.heads, W, 0);
  copy_rows_to_heads(k, qkv, s, s.kv_heads, W, s.q_width());
  copy_rows_to_heads(v, qkv, s, s.kv_heads, W, s.q_width() + s.kv_width());
}

template <typename T>
void split_heads_backward(T* dqkv, const T* dq, const T* dk, const T* dv, const AttentionShape& s) {
  const std::size_t W = s.qkv_width();
  copy_heads_to_rows(dqkv, dq, s, s.heads, W, 0);
  copy_heads_to_rows(dqkv, dk, s, s.kv_heads, W, s.q_width());
  copy_heads_to_rows(dqkv, dv, s, s.kv_heads, W, s.q_width() + s.kv_width());
}

template <typename T>
void merge_heads_forward(T* y, const T* o, const AttentionShape& s) {
  copy_heads_to_rows(y, o, s, s.heads, s.q_width(), 0);
}

template <typename T>
void merge_heads_backward(T* d_o, const T* dy, const AttentionShape& s) {
  copy_rows_to_heads(d_o, dy, s, s.heads, s.q_width(), 0);
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
  const std::size_t S = s.seq, Sk = s.keys(), D = s.head_dim;
  const T scale = T(1) / std::sqrt(static_cast<T>(D));
  std::vector<T> scratch(probs == nullptr ? S * Sk : 0);
  for_each_query_head(s, [&](std::size_t bh, std::size_t bkv) {
    const T* qh = q + bh * S * D;
    const T* kh = k + bkv * Sk * D;
    const T* vh = v + bkv * Sk * D;
    T* p = probs != nullptr ? probs + bh * S * Sk : scratch.data();
    head_probs(p, qh, kh, s, scale);
    gemm<T>(false, false, S, D, Sk, T(1), p, vh, T(0), o + bh * S * D);
  });
}

template <typename T>
void attention_backward(T* dq, T* dk, T* dv, const T* d_o, const T* probs, const T* q, const T* k,
                        const T* v, const AttentionShape& s) {
  const std::size_t S = s.seq, Sk = s.keys(), D = s.head_dim;
  const T scale = T(1) / std::sqrt(static_cast<T>(D));
  std::fill_n(dk, s.batch * s.kv_heads * Sk * D, T(0));
  std::fill_n(dv, s.batch * s.kv_heads * Sk * D, T(0));
  std::vector<T> p_scratch(probs == nullptr ? S * Sk : 0), dp(S * Sk);
  for_each_query_head(s, [&](std::size_t bh, std::size_t bkv) {
    const T* qh = q + bh * S * D;
    const T* kh = k + bkv * Sk * D;
    const T* vh = v + bkv * Sk * D;
    const T* doh = d_o + bh * S * D;
    T* dqh = dq + bh * S * D;
    T* dkh = dk + bkv * Sk * D;
    T* dvh = dv + bkv * Sk * D;
    const T* p = probs;
    if (probs == nullptr) {  // selective recompute: rebuild the probabilities
      head_probs(p_scratch.data(), qh, kh, s, scale);
      p = p_scratch.data();
    } else {
      p = probs + bh * S * Sk;
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
  });
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
