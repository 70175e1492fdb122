// ZeRO-2/3 traffic per layer group against closed forms by hand on the toy cluster
// (300 GB/s, 3 us inside a node).
#include "costmodel/zero_sharding.h"

#include <gtest/gtest.h>

#include "costmodel/software_stack.h"

#include "test_profiles.h"

namespace sc = strata::costmodel;

namespace {
// A 100M-parameter group gathered in bf16 (200 MB) and reduced in fp32 (400 MB) over 8
// ranks in one node: ring all-gather 7 x 3 us + 200e6 x 7/8 / 300e9 = 604.333 us; the
// reduce-scatter 7 x 3 us + 400e6 x 7/8 / 300e9 = 1187.667 us.
constexpr double kParams = 100e6;
const double kAg = 7 * 3e-6 + 200e6 * 7.0 / 8.0 / 300e9;
const double kRs = 7 * 3e-6 + 400e6 * 7.0 / 8.0 / 300e9;
const sc::PlacedGroup kDp8{8, 1, 8};
}  // namespace

TEST(ZeroSharding, StageTwoReduceScattersEachMicroBatchBesideTheBackward) {
  const sc::CollectiveCost coll(sc::testing::toy_cluster());
  EXPECT_NEAR(kRs, 1187.667e-6, 1e-9);
  auto z = sc::zero_group_comm(2, kParams, 2, 4, 1e-3, 1e-3, false, true, coll, kDp8);
  EXPECT_NEAR(z.bwd_comm_s, kRs, 1e-12);
  EXPECT_NEAR(z.bwd_exposed_s, kRs - 1e-3, 1e-12);  // 187.667 us past a 1 ms backward
  EXPECT_EQ(z.fwd_comm_s + z.fwd_exposed_s, 0.0);
  z = sc::zero_group_comm(2, kParams, 2, 4, 1e-3, 2e-3, false, true, coll, kDp8);
  EXPECT_EQ(z.bwd_exposed_s, 0.0);
  // Stages 0 and 1, or one rank: nothing per micro-batch.
  for (int zero : {0, 1})
    EXPECT_EQ(sc::zero_group_comm(zero, kParams, 2, 4, 0, 0, false, true, coll, kDp8).bwd_comm_s, 0.0);
  EXPECT_EQ(sc::zero_group_comm(3, kParams, 2, 4, 0, 0, false, true, coll, {1, 1, 1}).bwd_comm_s, 0.0);
}

TEST(ZeroSharding, StageThreeGathersForwardAndBackwardAndOnceMoreUnderRecompute) {
  const sc::CollectiveCost coll(sc::testing::toy_cluster());
  EXPECT_NEAR(kAg, 604.333e-6, 1e-9);
  // Prefetched: forward gather beside a 0.5 ms forward; backward gather + reduce-scatter
  // beside a 1 ms backward.
  auto z = sc::zero_group_comm(3, kParams, 2, 4, 0.5e-3, 1e-3, false, true, coll, kDp8);
  EXPECT_NEAR(z.fwd_comm_s, kAg, 1e-12);
  EXPECT_NEAR(z.fwd_exposed_s, kAg - 0.5e-3, 1e-12);
  EXPECT_NEAR(z.bwd_comm_s, kAg + kRs, 1e-12);
  EXPECT_NEAR(z.bwd_exposed_s, kAg + kRs - 1e-3, 1e-12);
  // Full recompute: the re-run forward gathers again, beside forward + backward compute.
  z = sc::zero_group_comm(3, kParams, 2, 4, 0.5e-3, 1e-3, true, true, coll, kDp8);
  EXPECT_NEAR(z.bwd_comm_s, 2 * kAg + kRs, 1e-12);
  EXPECT_NEAR(z.bwd_exposed_s, 2 * kAg + kRs - 1.5e-3, 1e-12);
  // No prefetch: every gather waits; the reduce-scatter still overlaps.
  z = sc::zero_group_comm(3, kParams, 2, 4, 0.5e-3, 2e-3, false, false, coll, kDp8);
  EXPECT_NEAR(z.fwd_exposed_s, kAg, 1e-12);
  EXPECT_NEAR(z.bwd_exposed_s, kAg, 1e-12);  // 1.188 ms reduce-scatter hidden by 2 ms
}

TEST(ZeroSharding, RoutedExpertsShardOverTheirOwnGroup) {
  const sc::CollectiveCost coll(sc::testing::toy_cluster());
  // 100M dense parameters over dp 8 (kAg, kRs above) and 40M expert parameters over an edp
  // group of 2 in one node: all-gather 1 x 3 us + 80e6 x 1/2 / 300e9 = 136.333 us,
  // reduce-scatter 1 x 3 us + 160e6 x 1/2 / 300e9 = 269.667 us.
  const double ag_e = 3e-6 + 80e6 / 2.0 / 300e9, rs_e = 3e-6 + 160e6 / 2.0 / 300e9;
  EXPECT_NEAR(ag_e, 136.333e-6, 1e-9);
  const sc::ZeroShard shards[] = {{kParams, kDp8}, {40e6, {2, 1, 2}}};
  // ZeRO-3, prefetched: the gathers add up on the one stream before the overlap.
  auto z = sc::zero_group_comm(3, shards, 2, 4, 0.5e-3, 1e-3, false, true, coll);
  EXPECT_NEAR(z.fwd_comm_s, kAg + ag_e, 1e-12);
  EXPECT_NEAR(z.fwd_exposed_s, kAg + ag_e - 0.5e-3, 1e-12);
  EXPECT_NEAR(z.bwd_comm_s, kAg + ag_e + kRs + rs_e, 1e-12);
  // ZeRO-2: the two reduce-scatters.
  EXPECT_NEAR(sc::zero_group_comm(2, shards, 2, 4, 0, 1e-3, false, true, coll).bwd_comm_s, kRs + rs_e, 1e-12);
  // An edp group of one rank keeps its experts whole: only the dense part moves.
  const sc::ZeroShard whole[] = {{kParams, kDp8}, {40e6, {1, 1, 1}}};
  EXPECT_NEAR(sc::zero_group_comm(3, whole, 2, 4, 0, 0, false, true, coll).fwd_comm_s, kAg, 1e-12);
}

TEST(ZeroSharding, OneBackwardGatherServesTheRecomputeWhereTheStackSaysSo) {
  // Megatron-FSDP and FSDP2 (zero3_recompute_regather: false): under full recompute the
  // backward's gather also feeds the re-run forward, so one gather, beside the same
  // forward + backward compute.
  const sc::CollectiveCost coll(sc::testing::toy_cluster());
  const sc::ZeroShard one[] = {{kParams, kDp8}};
  auto z = sc::zero_group_comm(3, one, 2, 4, 0.5e-3, 1e-3, true, true, coll, /*recompute_regathers=*/false);
  EXPECT_NEAR(z.bwd_comm_s, kAg + kRs, 1e-12);
  EXPECT_NEAR(z.bwd_exposed_s, kAg + kRs - 1.5e-3, 1e-12);
  EXPECT_NEAR(z.fwd_comm_s, kAg, 1e-12);
  // Without recompute the setting changes nothing.
  const auto a = sc::zero_group_comm(3, one, 2, 4, 0.5e-3, 1e-3, false, true, coll, false);
  const auto b = sc::zero_group_comm(3, one, 2, 4, 0.5e-3, 1e-3, false, true, coll, true);
  EXPECT_EQ(a.bwd_comm_s, b.bwd_comm_s);
  // The catalog's Megatron-Core and TorchTitan stacks read it as false, the default as true.
  EXPECT_FALSE(sc::load_software_stack("mcore-2024-deepep").zero3_recompute_regather);
  EXPECT_FALSE(sc::load_software_stack("torchtitan-2024").zero3_recompute_regather);
  EXPECT_TRUE(sc::load_software_stack("megatron-2021").zero3_recompute_regather);
}

TEST(ZeroSharding, ModuleByModuleGathersPayOneLatencyPerModule) {
  const sc::CollectiveCost coll(sc::testing::toy_cluster());
  // The 100M parameters as DeepSpeed stage 3 fetches them: four weight modules of 30M, 10M,
  // 40M and 20M (QKV, out, up, down), one all-gather each: the bytes are the block's,
  // the ring latency four times: 4 x 7 x 3 us + 200e6 x 7/8 / 300e9 = 667.333 us.
  const double units[] = {30e6, 10e6, 40e6, 20e6};
  const double ag4 = 4 * 7 * 3e-6 + 200e6 * 7.0 / 8.0 / 300e9;
  EXPECT_NEAR(ag4, 667.333e-6, 1e-9);
  const sc::ZeroShard by_module{kParams, kDp8, true, units};
  auto z = sc::zero_group_comm(3, std::span<const sc::ZeroShard>(&by_module, 1), 2, 4, 0.5e-3, 1e-3, false, true,
                               coll);
  EXPECT_NEAR(z.fwd_comm_s, ag4, 1e-12);
  EXPECT_NEAR(z.bwd_comm_s, ag4 + kRs, 1e-12);  // gradients still reduced once per group
  // Every module persisted (none listed): no gathers at all, the reduce-scatter stays.
  const sc::ZeroShard persisted{kParams, kDp8, true, {}};
  z = sc::zero_group_comm(3, std::span<const sc::ZeroShard>(&persisted, 1), 2, 4, 0.5e-3, 1e-3, false, true, coll);
  EXPECT_EQ(z.fwd_comm_s, 0.0);
  EXPECT_NEAR(z.bwd_comm_s, kRs, 1e-12);
  // ZeRO-2 never gathers, whatever the unit.
  z = sc::zero_group_comm(2, std::span<const sc::ZeroShard>(&by_module, 1), 2, 4, 0.5e-3, 1e-3, false, true, coll);
  EXPECT_EQ(z.fwd_comm_s, 0.0);
}

// What compute hides still holds NCCL's SMs: each hidden second costs sm_share seconds.
TEST(ZeroSharding, HiddenTrafficSlowsTheComputeBesideItByItsSmShare) {
  const sc::CollectiveCost coll(sc::testing::toy_cluster());
  const double share = 0.25;
  // Prefetched and fully hidden: a 2 ms forward beside the 0.604 ms gather, a 3 ms backward
  // beside gather + reduce-scatter (1.792 ms).
  auto z = sc::zero_group_comm(3, kParams, 2, 4, 2e-3, 3e-3, false, true, coll, kDp8, share);
  EXPECT_NEAR(z.fwd_exposed_s, share * kAg, 1e-12);
  EXPECT_NEAR(z.bwd_exposed_s, share * (kAg + kRs), 1e-12);
  // Partly hidden: past a 0.5 ms forward the gather waits; the 0.5 ms beside it pays the share.
  z = sc::zero_group_comm(3, kParams, 2, 4, 0.5e-3, 1e-3, false, true, coll, kDp8, share);
  EXPECT_NEAR(z.fwd_exposed_s, (kAg - 0.5e-3) + share * 0.5e-3, 1e-12);
  EXPECT_NEAR(z.bwd_exposed_s, (kAg + kRs - 1e-3) + share * 1e-3, 1e-12);
  // ZeRO-2's reduce-scatter beside a 2 ms backward; without prefetch only it overlaps.
  z = sc::zero_group_comm(2, kParams, 2, 4, 1e-3, 2e-3, false, true, coll, kDp8, share);
  EXPECT_NEAR(z.bwd_exposed_s, share * kRs, 1e-12);
  z = sc::zero_group_comm(3, kParams, 2, 4, 0.5e-3, 2e-3, false, false, coll, kDp8, share);
  EXPECT_NEAR(z.fwd_exposed_s, kAg, 1e-12);
  EXPECT_NEAR(z.bwd_exposed_s, kAg + share * kRs, 1e-12);
  // No share: as before.
  EXPECT_EQ(sc::zero_group_comm(3, kParams, 2, 4, 2e-3, 3e-3, false, true, coll, kDp8).fwd_exposed_s, 0.0);
}
