// Context-parallel K/V exchange against closed forms computed by hand on the toy cluster
// (300 GB/s, 3 us inside a node; 25 GB/s, 6 us across).
#include "costmodel/context_parallel_cost.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "test_profiles.h"

namespace sc = strata::costmodel;

namespace {

// Llama-3-70B-like attention at 128K tokens: 8 K/V heads x 128 = 1024 wide, tp 8, cp 16,
// bf16: each rank keeps 8192 tokens of K and V of 1024 / 8 = 128 channels:
// 2 * 8192 * 128 * 2 B = 4 MiB.
constexpr double kKv = 4.0 * 1024 * 1024;

}  // namespace

TEST(ContextParallelCost, KvBytesPerRankByHand) {
  EXPECT_DOUBLE_EQ(sc::cp_kv_bytes_per_rank(1, 131072, 1024, 8, 16, 2), kKv);
  // Two sequences, no tp, cp 2, fp32: 2 (K, V) * 2 * 1024 * 4096 * 4 B.
  EXPECT_DOUBLE_EQ(sc::cp_kv_bytes_per_rank(2, 2048, 4096, 1, 2, 4), 2.0 * 2 * 1024 * 4096 * 4);
  EXPECT_THROW(sc::cp_kv_bytes_per_rank(1, 2048, 4096, 1, 0, 2), strata::InputError);
}

TEST(ContextParallelCost, RingHidesEachHopBehindOneStepOfAttention) {
  const sc::CollectiveCost coll(sc::testing::toy_cluster());
  const sc::PlacedGroup in_node{8, 1, 8};
  // Forward hop: 3 us + 4 MiB / 300 GB/s = 3 + 13.981 us; one of cp = 8 attention steps
  // of 80 us is 10 us: 6.981 us exposed per hop, 7 hops.
  const double hop = 3e-6 + kKv / 300e9;
  const double hop2 = 3e-6 + 2 * kKv / 300e9;  // backward: K/V and dK/dV
  auto r = sc::cp_attention_comm(sc::CpCommType::P2p, 8, kKv, 80e-6, 200e-6, coll, in_node);
  EXPECT_NEAR(r.fwd_comm_s, 7 * hop, 1e-12);
  EXPECT_NEAR(r.fwd_exposed_s, 7 * (hop - 10e-6), 1e-12);
  EXPECT_NEAR(r.fwd_exposed_s, 7 * 6.98101e-6, 1e-10);
  // Backward hop: 3 + 27.962 us = 30.962 us against a step of 200 / 8 = 25 us: 5.962 us each.
  EXPECT_NEAR(r.bwd_exposed_s, 7 * (hop2 - 25e-6), 1e-12);
  // Enough attention work hides the ring completely.
  r = sc::cp_attention_comm(sc::CpCommType::P2p, 8, kKv, 8e-3, 16e-3, coll, in_node);
  EXPECT_EQ(r.fwd_exposed_s, 0.0);
  EXPECT_EQ(r.bwd_exposed_s, 0.0);
  EXPECT_GT(r.fwd_comm_s, 0.0);
  // A CP group across nodes pays the network per hop: 6 us + 4 MiB / 25 GB/s = 173.77 us.
  const sc::PlacedGroup across{16, 2, 8};
  r = sc::cp_attention_comm(sc::CpCommType::P2p, 16, kKv, 16e-6, 0, coll, across);
  EXPECT_NEAR(r.fwd_exposed_s, 15 * (6e-6 + kKv / 25e9 - 1e-6), 1e-12);
  // cp = 1: nothing to exchange.
  r = sc::cp_attention_comm(sc::CpCommType::P2p, 1, kKv, 1, 1, coll, in_node);
  EXPECT_EQ(r.fwd_comm_s + r.bwd_comm_s + r.fwd_exposed_s + r.bwd_exposed_s, 0.0);
}

TEST(ContextParallelCost, AllGatherIsExposedAndGathersAgainInTheBackward) {
  const sc::CollectiveCost coll(sc::testing::toy_cluster());
  const sc::PlacedGroup in_node{8, 1, 8};
  // Ring all-gather of the 8 x 4 MiB buffer: 7 x 3 us + 32 MiB x 7/8 / 300 GB/s.
  const double ag = 7 * 3e-6 + 8 * kKv * 7.0 / 8.0 / 300e9;
  const auto r = sc::cp_attention_comm(sc::CpCommType::AllGather, 8, kKv, 1.0, 1.0, coll, in_node);
  EXPECT_NEAR(r.fwd_exposed_s, ag, 1e-12);
  EXPECT_NEAR(r.fwd_exposed_s, 118.87e-6, 0.01e-6);
  // Backward: all-gather K/V again + reduce-scatter dK/dV (same ring cost).
  EXPECT_NEAR(r.bwd_exposed_s, 2 * ag, 1e-12);
}

TEST(ContextParallelCost, CommTypeNames) {
  EXPECT_EQ(sc::cp_comm_type_from_string("p2p"), sc::CpCommType::P2p);
  EXPECT_EQ(sc::cp_comm_type_from_string("all_gather"), sc::CpCommType::AllGather);
  EXPECT_EQ(sc::cp_comm_type_from_string("allgather"), sc::CpCommType::AllGather);
  EXPECT_STREQ(sc::to_string(sc::CpCommType::AllGather), "all_gather");
  EXPECT_THROW(sc::cp_comm_type_from_string("a2a"), strata::InputError);
}
