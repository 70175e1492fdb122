#include "costmodel/collective_cost.h"

#include <cmath>

#include <gtest/gtest.h>

#include "common/errors.h"
#include "test_profiles.h"

namespace sc = strata::costmodel;
using sc::Collective;
using sc::PlacedGroup;

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kIntraBw = 300e9, kInterBw = 25e9, kIntraA = 3e-6, kInterA = 6e-6;

TEST(CollectiveCost, SmShareIsTheLinksCommSmsOverTheDevicesSmCount) {
  auto c = sc::load_cluster("dgx-h100");
  ASSERT_EQ(c.device.sm_count, 132);
  EXPECT_DOUBLE_EQ(sc::comm_sm_share(c, PlacedGroup{16, 2, 8}), 16.0 / 132.0);  // across nodes
  EXPECT_DOUBLE_EQ(sc::comm_sm_share(c, PlacedGroup{8, 1, 8}), 24.0 / 132.0);   // NVLink: 24 channels
  c.intra_node.comm_sms = 0;
  EXPECT_DOUBLE_EQ(sc::comm_sm_share(c, PlacedGroup{8, 1, 8}), 0.0);  // not given
  EXPECT_DOUBLE_EQ(sc::comm_sm_share(c, PlacedGroup{1, 1, 1}), 0.0);            // no collective
  c.device.sm_count = 0;
  EXPECT_DOUBLE_EQ(sc::comm_sm_share(c, PlacedGroup{16, 2, 8}), 0.0);
}

}  // namespace

TEST(PlacedGroup, FollowsTheRankGridOnNodes) {
  // tp = 8 fills a node; dp groups stride over nodes.
  sc::RankGrid g(4, 8, 2);
  EXPECT_EQ(sc::placed_group(g, sc::Axis::Tp, 8), (PlacedGroup{8, 1, 8}));
  EXPECT_EQ(sc::placed_group(g, sc::Axis::Dp, 8), (PlacedGroup{4, 4, 1}));
  EXPECT_EQ(sc::placed_group(g, sc::Axis::Pp, 8), (PlacedGroup{2, 2, 1}));
  // tp = 2, dp = 8: a dp group has 4 ranks on each of 2 nodes.
  sc::RankGrid h(8, 2, 1);
  EXPECT_EQ(sc::placed_group(h, sc::Axis::Dp, 8), (PlacedGroup{8, 2, 4}));
  // tp = 3 on 8-rank nodes: group {6,7,8} straddles two nodes; the worst one is reported.
  sc::RankGrid k(8, 3, 1);
  EXPECT_EQ(sc::placed_group(k, sc::Axis::Tp, 8), (PlacedGroup{3, 2, 2}));
  EXPECT_EQ(sc::placed_ranks({0, 1, 2}, 8), (PlacedGroup{3, 1, 3}));
  // Ranks in any order, by hand: nodes 2, 0, 2, 1, 2 -> 3 nodes, node 2 holds three.
  EXPECT_EQ(sc::placed_ranks({17, 3, 23, 9, 16}, 8), (PlacedGroup{5, 3, 3}));
  // Pipeline neighbours: with tp*dp = 4 per stage, stages 0/1 share a node, 1/2 do not.
  sc::RankGrid p(2, 2, 4);
  EXPECT_EQ(sc::placed_pp_pair(p, 0, 8), (PlacedGroup{2, 1, 2}));
  EXPECT_EQ(sc::placed_pp_pair(p, 1, 8), (PlacedGroup{2, 2, 1}));
  EXPECT_THROW(sc::placed_pp_pair(p, 3, 8), strata::InputError);
}

TEST(PlacedGroup, WorstGroupMatchesABruteForceScanOfAllGroups) {
  auto worse = [](const PlacedGroup& a, const PlacedGroup& b) {
    return a.nodes_spanned != b.nodes_spanned ? a.nodes_spanned > b.nodes_spanned
                                              : a.ranks_per_node_in_group < b.ranks_per_node_in_group;
  };
  int cases = 0;
  for (int dp : {1, 2, 3, 6, 16})
    for (int tp : {1, 2, 3, 4, 6, 8, 12})
      for (int pp : {1, 2, 3, 5, 8})
        for (const char* order : {"tp-dp-pp", "tp-pp-dp", "dp-tp-pp", "pp-dp-tp"})
          for (int gpn : {1, 2, 4, 8, 6}) {
            sc::RankGrid g(dp, tp, pp, order);
            for (sc::Axis a : {sc::Axis::Tp, sc::Axis::Dp, sc::Axis::Pp}) {
              PlacedGroup want;
              bool first = true;
              for (const auto& grp : g.all_groups(a)) {
                PlacedGroup p = sc::placed_ranks(grp, gpn);
                if (first || worse(p, want)) want = p, first = false;
              }
              ASSERT_EQ(sc::placed_group(g, a, gpn), want)
                  << dp << " " << tp << " " << pp << " " << order << " gpn " << gpn << " "
                  << sc::to_string(a);
              ++cases;
            }
            for (int st = 0; st + 1 < pp; ++st) {
              PlacedGroup want;
              bool first = true;
              for (int d = 0; d < dp; ++d)
                for (int t = 0; t < tp; ++t) {
                  PlacedGroup p = sc::placed_ranks({g.rank({d, t, st}), g.rank({d, t, st + 1})}, gpn);
                  if (first || worse(p, want)) want = p, first = false;
                }
              ASSERT_EQ(sc::placed_pp_pair(g, st, gpn), want);
            }
          }
  EXPECT_GT(cases, 1000);
}

TEST(CollectiveCost, IntraNodeRingMatchesAlphaBetaByHand) {
  sc::CollectiveCost cc(sc::testing::toy_cluster());
  const double B = 1 * kGiB;
  // all-reduce over 8 ranks in a node: 2(n-1) alpha + B * 2(n-1)/n / bw
  EXPECT_NEAR(cc.time_s(Collective::AllReduce, B, {8, 1, 8}),
              2 * 7 * kIntraA + B * 2.0 * 7 / 8 / kIntraBw, 1e-12);
  EXPECT_NEAR(cc.time_s(Collective::AllGather, B, {4, 1, 4}),
              3 * kIntraA + B * 3.0 / 4 / kIntraBw, 1e-12);
  EXPECT_NEAR(cc.time_s(Collective::SendRecv, 1e6, {2, 1, 2}), kIntraA + 1e6 / kIntraBw, 1e-15);
  EXPECT_EQ(cc.time_s(Collective::AllReduce, B, {1, 1, 1}), 0.0);
  EXPECT_EQ(cc.time_s(Collective::AllReduce, 0, {8, 1, 8}), 0.0);
}

TEST(CollectiveCost, OneRankPerNodeUsesTheNetworkRing) {
  sc::CollectiveCost cc(sc::testing::toy_cluster());
  const double B = 256e6;
  EXPECT_NEAR(cc.time_s(Collective::AllReduce, B, {4, 4, 1}),
              2 * 3 * kInterA + B * 2.0 * 3 / 4 / kInterBw, 1e-12);
  EXPECT_NEAR(cc.time_s(Collective::SendRecv, B, {2, 2, 1}), kInterA + B / kInterBw, 1e-12);
}

TEST(CollectiveCost, GroupsAcrossNodesAreHierarchical) {
  sc::CollectiveCost cc(sc::testing::toy_cluster());
  const double B = 1 * kGiB;
  // 16 ranks = 2 nodes x 8: RS inside (8), AR across (2 nodes) on B/8, AG inside (8).
  double rs_intra = 7 * kIntraA + B * 7.0 / 8 / kIntraBw;
  double ar_inter = 2 * 1 * kInterA + (B / 8) * 2.0 * 1 / 2 / kInterBw;
  double ag_intra = rs_intra;
  EXPECT_NEAR(cc.time_s(Collective::AllReduce, B, {16, 2, 8}), rs_intra + ar_inter + ag_intra, 1e-12);
  // Reduce-scatter and all-gather: one intra and one inter phase, and NCCL's ring's other
  // node's 7 hops inside it (n - N = 14 intra hops in all).
  double rs_inter = 1 * kInterA + (B / 8) * 1.0 / 2 / kInterBw;
  EXPECT_NEAR(cc.time_s(Collective::ReduceScatter, B, {16, 2, 8}), rs_intra + rs_inter + 7 * kIntraA, 1e-12);
  EXPECT_NEAR(cc.time_s(Collective::AllGather, B, {16, 2, 8}), rs_inter + ag_intra + 7 * kIntraA, 1e-12);
  // The hierarchical all-reduce beats a flat ring over the network for large messages.
  double flat = 2 * 15 * kInterA + B * 2.0 * 15 / 16 / kInterBw;
  EXPECT_LT(cc.time_s(Collective::AllReduce, B, {16, 2, 8}), flat);
}

// NCCL's ring latency for all-gather / reduce-scatter (src/graph/tuning.cc): nRanks - nNodes
// hops inside nodes and nNodes - 1 across; the bytes cross nodes once per rail.
TEST(CollectiveCost, RingAcrossManyNodesPaysEveryNodesIntraHops) {
  sc::CollectiveCost cc(sc::testing::toy_cluster());
  const double B = 100e6;
  // 512 ranks on 64 nodes of 8: 63 hops across, 448 inside.
  const double latency = 63 * kInterA + 448 * kIntraA;
  const double bandwidth = (B / 8) * 63.0 / 64 / kInterBw + B * 7.0 / 8 / kIntraBw;
  EXPECT_NEAR(cc.time_s(Collective::AllGather, B, {512, 64, 8}), latency + bandwidth, 1e-12);
  EXPECT_NEAR(cc.time_s(Collective::ReduceScatter, B, {512, 64, 8}), latency + bandwidth, 1e-12);
  // At 128 ranks (16 nodes) the same bytes take almost the same bandwidth time, but 336 fewer
  // intra-node hops and 48 fewer across.
  const double t128 = cc.time_s(Collective::AllGather, B, {128, 16, 8});
  EXPECT_NEAR(cc.time_s(Collective::AllGather, B, {512, 64, 8}) - t128,
              48 * kInterA + 336 * kIntraA + (B / 8) * (63.0 / 64 - 15.0 / 16) / kInterBw, 1e-12);
  // Two ranks per node on 4 nodes: 4 hops inside (one per node), 3 across.
  EXPECT_NEAR(cc.time_s(Collective::AllGather, B, {8, 4, 2}),
              3 * kInterA + 4 * kIntraA + (B / 2) * 3.0 / 4 / kInterBw + B * 1.0 / 2 / kIntraBw, 1e-12);
}

TEST(CollectiveCost, MeasuredTableIsExactAtPointsAndMonotoneBetween) {
  auto cluster = sc::testing::toy_cluster();
  // A measured 8-rank all-reduce curve whose busbw grows with size.
  const double sizes[] = {1024, 65536, 4194304, 268435456};
  const double busbw_gbps[] = {0.5, 20, 150, 230};
  for (int i = 0; i < 4; ++i) {
    sc::CollectiveSample s;
    s.collective = Collective::AllReduce;
    s.ranks = 8;
    s.bytes = static_cast<std::int64_t>(sizes[i]);
    s.busbw_gbps = busbw_gbps[i];
    s.time_us = sizes[i] * sc::bus_factor(Collective::AllReduce, 8) / (busbw_gbps[i] * 1e9) * 1e6;
    cluster.device.collective_table.push_back(s);
  }
  sc::CollectiveCost cc(cluster);
  const PlacedGroup g{8, 1, 8};
  for (int i = 0; i < 4; ++i) {
    auto e = cc.estimate(Collective::AllReduce, sizes[i], g);
    EXPECT_EQ(e.source, sc::TimeSource::Measured);
    EXPECT_NEAR(e.time_s, cluster.device.collective_table[static_cast<std::size_t>(i)].time_us * 1e-6,
                1e-12 * e.time_s);
  }
  double prev = 0;
  for (double b = 1024; b <= 268435456; b *= 1.1) {
    double t = cc.time_s(Collective::AllReduce, b, g);
    EXPECT_GE(t, prev * (1 - 1e-12)) << b;
    prev = t;
  }
  // Below the table: latency floor; above: saturated busbw.
  EXPECT_DOUBLE_EQ(cc.time_s(Collective::AllReduce, 8, g), cluster.device.collective_table[0].time_us * 1e-6);
  EXPECT_NEAR(cc.time_s(Collective::AllReduce, 2 * 268435456.0, g),
              2 * 268435456.0 * 1.75 / 230e9, 1e-12);
  // A group the table does not cover falls back to alpha-beta.
  EXPECT_NEAR(cc.time_s(Collective::AllReduce, 1e6, {4, 1, 4}), 2 * 3 * kIntraA + 1e6 * 1.5 / kIntraBw, 1e-15);
}

TEST(CollectiveCost, RejectsNegativeBytesAndInconsistentGroups) {
  sc::CollectiveCost cc(sc::testing::toy_cluster());
  EXPECT_THROW(cc.time_s(Collective::AllReduce, -1, {8, 1, 8}), strata::InputError);
  EXPECT_THROW(cc.time_s(Collective::AllReduce, 1, {2, 3, 1}), strata::InputError);
}

// The H100 profile carries the published all-reduce curve of a DGX H100 node (nccl-tests
// busbw by size): 8-rank all-reduces inside a node follow it, busbw interpolated in log
// space; other collectives and placements keep the alpha-beta ring.
TEST(CollectiveCost, PublishedH100AllReduceCurveByHand) {
  const auto c = sc::load_cluster("dgx-h100");
  const sc::CollectiveCost cost(c);
  const sc::PlacedGroup node{8, 1, 8};
  const double bf = 2.0 * 7 / 8;
  // At a published size: the published busbw (67.0 GB/s at 1 MiB).
  auto at = cost.estimate(sc::Collective::AllReduce, 1048576, node);
  EXPECT_EQ(at.source, sc::TimeSource::Measured);
  EXPECT_NEAR(at.time_s, 1048576 * bf / 67.0e9, 1e-3 * at.time_s);
  // 2 MiB lies halfway (in log bytes) between 1 MiB (67.0) and 4 MiB (135.4 GB/s).
  auto mid = cost.estimate(sc::Collective::AllReduce, 2097152, node);
  EXPECT_EQ(mid.source, sc::TimeSource::Interpolated);
  EXPECT_NEAR(mid.time_s, 2097152 * bf / std::sqrt(67.0e9 * 135.4e9), 2e-3 * mid.time_s);
  // Small messages cost far more than the alpha-beta ring says (protocol and channel ramp).
  const double ring = sc::CollectiveCost::ring_time_s(sc::Collective::AllReduce, 4194304, 8,
                                                      c.intra_node.latency_us * 1e-6,
                                                      c.intra_node.bandwidth_gbps * 1e9 * c.intra_node.efficiency);
  EXPECT_GT(cost.time_s(sc::Collective::AllReduce, 4194304, node), 1.4 * ring);
  // All-gather on the same group, and an all-reduce over two nodes: still the ring model.
  EXPECT_EQ(cost.estimate(sc::Collective::AllGather, 4194304, node).source, sc::TimeSource::Roofline);
  EXPECT_EQ(cost.estimate(sc::Collective::AllReduce, 4194304, sc::PlacedGroup{16, 2, 8}).source,
            sc::TimeSource::Roofline);
}
