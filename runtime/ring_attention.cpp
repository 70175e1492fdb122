#include "runtime/ring_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/errors.h"
#include "runtime/matmul.h"

namespace strata::runtime {

namespace {

std::vector<std::size_t> positions(std::size_t full_seq, int cp, int rank, std::size_t Sl) {
  std::vector<std::size_t> p(Sl);
  for (std::size_t t = 0; t < Sl; ++t) p[t] = cp_position(full_seq, cp, rank, t);
  return p;
}

// Sends `buf` to the next rank of the ring and receives the previous rank's into it.
void shift(const CpGroup& cp, std::vector<float>& buf, std::vector<float>& scratch) {
  cp.comm->send_recv(buf.data(), (cp.rank + 1) % cp.size, scratch.data(),
                     (cp.rank + cp.size - 1) % cp.size, buf.size());
  std::swap(buf, scratch);
}

// The heads of the block visiting at ring step `step` (rank (rank - step) mod size's K/V,
// whose key positions are `kpos`): f(bh, kvh, kpos) for every (batch, query head), bh
// indexing q / o and kvh the head's K/V head in the block.
template <typename F>
void for_each_visiting_head(const CpGroup& cp, std::size_t full_seq, const AttentionShape& s, int step, F&& f) {
  const int src = (cp.rank - step + cp.size) % cp.size;
  const auto kpos = positions(full_seq, cp.size, src, s.seq);
  const std::size_t group = s.heads / s.kv_heads;
  for (std::size_t b = 0; b < s.batch; ++b)
    for (std::size_t h = 0; h < s.heads; ++h) f(b * s.heads + h, b * s.kv_heads + h / group, kpos);
}

}  // namespace

void ring_attention_forward(const CpGroup& cp, std::size_t full_seq, const AttentionShape& s,
                            const float* q, const float* k, const float* v, float* o, float* lse) {
  STRATA_CHECK(cp.comm != nullptr && cp.size > 1, "ring attention without a CP group");
  const std::size_t B = s.batch, H = s.heads, KV = s.kv_heads, Sl = s.seq, D = s.head_dim;
  const std::size_t n_kv = B * KV * Sl * D;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const auto qpos = positions(full_seq, cp.size, cp.rank, Sl);
  std::vector<float> blk(2 * n_kv), scratch(2 * n_kv);  // [k | v] of the visiting block
  std::copy_n(k, n_kv, blk.begin());
  std::copy_n(v, n_kv, blk.begin() + static_cast<std::ptrdiff_t>(n_kv));
  std::vector<float> m(B * H * Sl, neg_inf), l(B * H * Sl, 0.0f), p(Sl * Sl);
  std::fill_n(o, B * H * Sl * D, 0.0f);
  for (int step = 0; step < cp.size; ++step) {
    for_each_visiting_head(cp, full_seq, s, step, [&](std::size_t bh, std::size_t kvh, const auto& kpos) {
      const float* qh = q + bh * Sl * D;
      const float* kh = blk.data() + kvh * Sl * D;
      const float* vh = blk.data() + n_kv + kvh * Sl * D;
      float* oh = o + bh * Sl * D;
      gemm<float>(false, true, Sl, Sl, D, scale, qh, kh, 0.0f, p.data());
      for (std::size_t i = 0; i < Sl; ++i) {
        float* row = p.data() + i * Sl;
        float mx = neg_inf;
        for (std::size_t j = 0; j < Sl; ++j)
          if (kpos[j] <= qpos[i]) mx = std::max(mx, row[j]);
        float& mi = m[bh * Sl + i];
        if (mx == neg_inf) {  // no visible key in this block
          std::fill_n(row, Sl, 0.0f);
          continue;
        }
        const float new_m = std::max(mi, mx);
        const float alpha = mi == neg_inf ? 0.0f : std::exp(mi - new_m);
        float sum = 0;
        for (std::size_t j = 0; j < Sl; ++j) {
          row[j] = kpos[j] <= qpos[i] ? std::exp(row[j] - new_m) : 0.0f;
          sum += row[j];
        }
        l[bh * Sl + i] = l[bh * Sl + i] * alpha + sum;
        for (std::size_t d = 0; d < D; ++d) oh[i * D + d] *= alpha;
        mi = new_m;
      }
      gemm<float>(false, false, Sl, D, Sl, 1.0f, p.data(), vh, 1.0f, oh);
    });
    if (step + 1 < cp.size) shift(cp, blk, scratch);
  }
  for (std::size_t r = 0; r < B * H * Sl; ++r) {
    const float inv = 1.0f / l[r];
    for (std::size_t d = 0; d < D; ++d) o[r * D + d] *= inv;
    lse[r] = m[r] + std::log(l[r]);
  }
}

void ring_attention_backward(const CpGroup& cp, std::size_t full_seq, const AttentionShape& s,
                             const float* q, const float* k, const float* v, const float* o,
                             const float* lse, const float* d_o, float* dq, float* dk, float* dv) {
  STRATA_CHECK(cp.comm != nullptr && cp.size > 1, "ring attention without a CP group");
  const std::size_t B = s.batch, H = s.heads, KV = s.kv_heads, Sl = s.seq, D = s.head_dim;
  const std::size_t n_kv = B * KV * Sl * D;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const auto qpos = positions(full_seq, cp.size, cp.rank, Sl);
  // delta_i = dO_i . O_i (the softmax backward's row term)
  std::vector<float> delta(B * H * Sl);
  for (std::size_t r = 0; r < B * H * Sl; ++r) {
    float acc = 0;
    for (std::size_t d = 0; d < D; ++d) acc += d_o[r * D + d] * o[r * D + d];
    delta[r] = acc;
  }
  // The visiting block: [k | v | dk | dv]; its dk/dv collect every rank's part.
  std::vector<float> blk(4 * n_kv, 0.0f), scratch(4 * n_kv);
  std::copy_n(k, n_kv, blk.begin());
  std::copy_n(v, n_kv, blk.begin() + static_cast<std::ptrdiff_t>(n_kv));
  std::fill_n(dq, B * H * Sl * D, 0.0f);
  std::vector<float> p(Sl * Sl), dp(Sl * Sl);
  for (int step = 0; step < cp.size; ++step) {
    for_each_visiting_head(cp, full_seq, s, step, [&](std::size_t bh, std::size_t kvh, const auto& kpos) {
      const float* qh = q + bh * Sl * D;
      const float* doh = d_o + bh * Sl * D;
      const float* kh = blk.data() + kvh * Sl * D;
      const float* vh = blk.data() + n_kv + kvh * Sl * D;
      float* dkh = blk.data() + 2 * n_kv + kvh * Sl * D;
      float* dvh = blk.data() + 3 * n_kv + kvh * Sl * D;
      gemm<float>(false, true, Sl, Sl, D, scale, qh, kh, 0.0f, p.data());
      for (std::size_t i = 0; i < Sl; ++i)
        for (std::size_t j = 0; j < Sl; ++j) {
          float& x = p[i * Sl + j];
          x = kpos[j] <= qpos[i] ? std::exp(x - lse[bh * Sl + i]) : 0.0f;
        }
      // dV += P^T dO ; dP = dO V^T ; dS = P (dP - delta)
      gemm<float>(true, false, Sl, D, Sl, 1.0f, p.data(), doh, 1.0f, dvh);
      gemm<float>(false, true, Sl, Sl, D, 1.0f, doh, vh, 0.0f, dp.data());
      for (std::size_t i = 0; i < Sl; ++i)
        for (std::size_t j = 0; j < Sl; ++j)
          dp[i * Sl + j] = p[i * Sl + j] * (dp[i * Sl + j] - delta[bh * Sl + i]);
      // dQ += scale dS K ; dK += scale dS^T Q
      gemm<float>(false, false, Sl, D, Sl, scale, dp.data(), kh, 1.0f, dq + bh * Sl * D);
      gemm<float>(true, false, Sl, D, Sl, scale, dp.data(), qh, 1.0f, dkh);
    });
    shift(cp, blk, scratch);  // the last shift brings each block home
  }
  std::copy_n(blk.begin() + static_cast<std::ptrdiff_t>(2 * n_kv), n_kv, dk);
  std::copy_n(blk.begin() + static_cast<std::ptrdiff_t>(3 * n_kv), n_kv, dv);
}

}  // namespace strata::runtime
