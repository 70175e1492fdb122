// Context parallel pieces: the load-balanced chunk layout by hand, and one CP rank's
// attention (its queries against the all-gathered keys/values, masked by position)
// against the rows of the one-rank attention at the same positions, forward and
// backward, with the key/value gradients reduce-scattered back over the CP group.
#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <vector>

#include "runtime/attention.h"
#include "runtime/context_parallel.h"
#include "runtime/ring_attention.h"
#include "tests/runtime/thread_communicator.h"

namespace strata::runtime {
namespace {

TEST(ContextParallel, ChunkPositionsByHand) {
  // 16 tokens, cp 2: four chunks of 4; rank 0 holds chunks 0 and 3, rank 1 chunks 1 and 2.
  const std::vector<std::size_t> r0 = {0, 1, 2, 3, 12, 13, 14, 15};
  const std::vector<std::size_t> r1 = {4, 5, 6, 7, 8, 9, 10, 11};
  for (std::size_t t = 0; t < 8; ++t) {
    EXPECT_EQ(cp_position(16, 2, 0, t), r0[t]);
    EXPECT_EQ(cp_position(16, 2, 1, t), r1[t]);
  }
  // cp 4, 16 tokens: chunks of 2; rank 1 holds chunks 1 and 6.
  EXPECT_EQ(cp_position(16, 4, 1, 0), 2u);
  EXPECT_EQ(cp_position(16, 4, 1, 1), 3u);
  EXPECT_EQ(cp_position(16, 4, 1, 2), 12u);
  EXPECT_EQ(cp_position(16, 4, 1, 3), 13u);
  EXPECT_EQ(cp_position(16, 1, 0, 7), 7u);
}

std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

void check_attention(CpKvExchange exchange) {
  const std::size_t B = 2, H = 4, KV = 2, S = 16, D = 8;
  const int cp = 2;
  const std::size_t Sl = S / cp;
  const AttentionShape full{.batch = B, .heads = H, .kv_heads = KV, .seq = S, .head_dim = D};
  const auto q = random_values(B * H * S * D, 1), k = random_values(B * KV * S * D, 2),
             v = random_values(B * KV * S * D, 3), d_o = random_values(B * H * S * D, 4);
  std::vector<float> o(q.size()), dq(q.size()), dk(k.size()), dv(v.size());
  attention_forward(o.data(), static_cast<float*>(nullptr), q.data(), k.data(), v.data(), full);
  attention_backward(dq.data(), dk.data(), dv.data(), d_o.data(), static_cast<const float*>(nullptr),
                     q.data(), k.data(), v.data(), full);

  // (rows, S, D) -> this rank's (rows, Sl, D)
  auto local = [&](const std::vector<float>& x, std::size_t rows, int r) {
    std::vector<float> out(rows * Sl * D);
    for (std::size_t row = 0; row < rows; ++row)
      for (std::size_t t = 0; t < Sl; ++t)
        for (std::size_t i = 0; i < D; ++i)
          out[(row * Sl + t) * D + i] = x[(row * S + cp_position(S, cp, r, t)) * D + i];
    return out;
  };
  testing::ThreadGroup group(cp);
  std::vector<std::thread> threads;
  std::vector<std::vector<float>> got_o(2), got_dq(2), got_dk(2), got_dv(2);
  for (int r = 0; r < cp; ++r)
    threads.emplace_back([&, r] {
      testing::ThreadCommunicator comm(group, r);
      const CpGroup g{&comm, cp, r};
      std::vector<std::size_t> pos(Sl);
      for (std::size_t t = 0; t < Sl; ++t) pos[t] = cp_position(S, cp, r, t);
      AttentionShape s = full;
      s.seq = Sl;
      const auto ql = local(q, B * H, r), kl = local(k, B * KV, r), vl = local(v, B * KV, r),
                 dol = local(d_o, B * H, r);
      const auto ri = static_cast<std::size_t>(r);
      if (exchange == CpKvExchange::Ring) {
        std::vector<float> ol(ql.size()), lse(B * H * Sl), dql(ql.size()), dkl(kl.size()), dvl(vl.size());
        ring_attention_forward(g, S, s, ql.data(), kl.data(), vl.data(), ol.data(), lse.data());
        ring_attention_backward(g, S, s, ql.data(), kl.data(), vl.data(), ol.data(), lse.data(),
                                dol.data(), dql.data(), dkl.data(), dvl.data());
        got_o[ri] = ol;
        got_dq[ri] = dql;
        got_dk[ri] = dkl;
        got_dv[ri] = dvl;
        return;
      }
      s.kv_seq = S;
      s.q_positions = pos.data();
      std::vector<float> kf(k.size()), vf(v.size());
      cp_gather_kv(g, S, B * KV, D, kl.data(), vl.data(), kf.data(), vf.data());
      std::vector<float> ol(ql.size()), dql(ql.size()), dkf(k.size()), dvf(v.size());
      attention_forward(ol.data(), static_cast<float*>(nullptr), ql.data(), kf.data(), vf.data(), s);
      attention_backward(dql.data(), dkf.data(), dvf.data(), dol.data(),
                         static_cast<const float*>(nullptr), ql.data(), kf.data(), vf.data(), s);
      std::vector<float> dkl(kl.size()), dvl(vl.size());
      cp_reduce_scatter_dkv(g, S, B * KV, D, dkf.data(), dvf.data(), dkl.data(), dvl.data());
      got_o[ri] = ol;
      got_dq[ri] = dql;
      got_dk[ri] = dkl;
      got_dv[ri] = dvl;
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < cp; ++r) {
    const auto ri = static_cast<std::size_t>(r);
    const auto want_o = local(o, B * H, r), want_dq = local(dq, B * H, r),
               want_dk = local(dk, B * KV, r), want_dv = local(dv, B * KV, r);
    for (std::size_t i = 0; i < want_o.size(); ++i) {
      ASSERT_NEAR(got_o[ri][i], want_o[i], 1e-5f) << to_string(exchange) << " o rank " << r << " at " << i;
      ASSERT_NEAR(got_dq[ri][i], want_dq[i], 1e-5f) << "dq rank " << r << " at " << i;
    }
    for (std::size_t i = 0; i < want_dk.size(); ++i) {
      ASSERT_NEAR(got_dk[ri][i], want_dk[i], 1e-5f) << "dk rank " << r << " at " << i;
      ASSERT_NEAR(got_dv[ri][i], want_dv[i], 1e-5f) << "dv rank " << r << " at " << i;
    }
  }
}

TEST(ContextParallel, AllGatherAttentionMatchesOneRankAtEveryPosition) {
  check_attention(CpKvExchange::AllGather);
}

TEST(ContextParallel, RingAttentionMatchesOneRankAtEveryPosition) {
  check_attention(CpKvExchange::Ring);
}

}  // namespace
}  // namespace strata::runtime
