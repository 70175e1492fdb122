// Node-limited (group-limited) routing and the bytes of the expert dispatch that cross
// nodes, per placement, by hand (costmodel/expert_dispatch_cost.h token_routing).
#include <cmath>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "common/errors.h"
#include "costmodel/collective_cost.h"
#include "costmodel/expert_dispatch_cost.h"
#include "test_profiles.h"
#include "models/model_graph.h"
#include "models/model_spec.h"

namespace sc = strata::costmodel;
namespace sm = strata::models;

namespace {

// DeepSeek-V3's routing: 256 experts, top 8, 8 groups, at most 4 groups per token.
sm::MoeSpec deepseek_routing(bool limited) {
  sm::MoeSpec e;
  e.experts = 256, e.top_k = 8, e.expert_ffn = 2048;
  if (limited) e.groups = 8, e.max_groups_per_token = 4;
  return e;
}

TEST(NodeLimitedRouting, EpInsideOneNodeSendsNothingAcrossNodes) {
  const sc::TokenRouting r = sc::token_routing(deepseek_routing(true), 1);
  EXPECT_EQ(r.nodes_reached, 1.0);
  EXPECT_EQ(r.copies_off_node, 0.0);
  EXPECT_EQ(r.sends_off_node, 0.0);
}

TEST(NodeLimitedRouting, EpOverEightNodesWithoutTheLimit) {
  // 32 experts per node. P(a node gets none of 8 copies) = C(224, 8) / C(256, 8)
  //   = (224 x 223 x ... x 217) / (256 x 255 x ... x 249) = 0.338168;
  // nodes reached 8 x (1 - 0.338168) = 5.29465; off-node sends 7 x 0.661832 = 4.63282.
  const sc::TokenRouting r = sc::token_routing(deepseek_routing(false), 8);
  EXPECT_NEAR(r.nodes_reached, 5.29465, 1e-5);
  EXPECT_NEAR(r.sends_off_node, 4.63282, 1e-5);
  // A per-copy all-to-all sends 8 x 7/8 = 7 copies off the node.
  EXPECT_DOUBLE_EQ(r.copies_off_node, 7.0);
}

TEST(NodeLimitedRouting, EpOverEightNodesWithTheLimit) {
  // One group per node; a token picks 4 of the 8 and 8 experts among their 128.
  // P(a node is hit) = 4/8 x (1 - C(96, 8) / C(128, 8)) = 0.5 x (1 - 0.0927473) = 0.453626;
  // nodes reached 8 x 0.453626 = 3.62901 (at most 4); off-node sends 7 x 0.453626 = 3.17538.
  const sc::TokenRouting r = sc::token_routing(deepseek_routing(true), 8);
  EXPECT_NEAR(r.nodes_reached, 3.62901, 1e-5);
  EXPECT_LE(r.nodes_reached, 4.0);
  EXPECT_NEAR(r.sends_off_node, 3.17538, 1e-5);
  // A per-copy all-to-all still sends 7 copies off the node: each expert is as likely as
  // without the limit, so the limit saves nothing there.
  EXPECT_DOUBLE_EQ(r.copies_off_node, 7.0);
}

TEST(NodeLimitedRouting, GroupsAcrossOrWithinNodes) {
  // 16 nodes, 8 groups: a group over 2 nodes of 16 experts. P(hit) = 4/8 x (1 - C(112, 8) /
  // C(128, 8)) = 0.5 x (1 - 0.332580) = 0.333710 (C(112,8)/C(128,8) = 112...105 / 128...121).
  EXPECT_NEAR(sc::token_routing(deepseek_routing(true), 16).nodes_reached, 16 * 0.333710, 1e-4);
  // 2 nodes, 4 groups each: both are reached unless all 4 chosen groups are the other
  // node's (C(4,4) C(4,0) / C(8,4) = 1/70), so P(hit) = 69/70 (at least one of its groups
  // chosen; then, with 1..3 of the 4 chosen groups on it, a miss needs all 8 experts from the
  // other node's 32..96: small terms summed by the code). Bounded by 2 and above 2 x 0.95.
  const double two = sc::token_routing(deepseek_routing(true), 2).nodes_reached;
  EXPECT_LT(two, 2.0);
  EXPECT_GT(two, 1.9);
  EXPECT_THROW(sc::token_routing(deepseek_routing(false), 3), strata::InputError);  // 3 does not divide 256
}

// Expected nodes reached by listing every choice: each set of M groups, then each set of k
// experts among theirs, equally likely; a node is reached when one of the k is its own.
double nodes_reached_by_listing(int E, int k, int G, int M, int N) {
  const int per_group = E / G, per_node = E / N;
  double reached = 0, choices = 0;
  for (unsigned groups = 0; groups < (1u << G); ++groups) {
    if (__builtin_popcount(groups) != M) continue;
    std::vector<int> candidates;
    for (int e = 0; e < E; ++e)
      if (groups & (1u << (e / per_group))) candidates.push_back(e);
    const int c = static_cast<int>(candidates.size());
    for (unsigned pick = 0; pick < (1u << c); ++pick) {
      if (__builtin_popcount(pick) != k) continue;
      unsigned nodes = 0;
      for (int i = 0; i < c; ++i)
        if (pick & (1u << i)) nodes |= 1u << (candidates[static_cast<std::size_t>(i)] / per_node);
      reached += __builtin_popcount(nodes);
      choices += 1;
    }
  }
  return reached / choices;
}

double nodes_reached(int E, int k, int G, int M, int N) {
  sm::MoeSpec e;
  e.experts = E, e.top_k = k, e.expert_ffn = 8, e.groups = G, e.max_groups_per_token = M;
  return sc::token_routing(e, N).nodes_reached;
}

// Groups straddling nodes unevenly (4 groups of 3 experts on 3 nodes of 4; 6 groups of 2 on 4
// nodes of 3): every node's chance counted from its own overlap with the groups, as listing
// every choice gives it. The nested placements agree with the listing too.
TEST(NodeLimitedRouting, GroupsStraddlingNodesMatchListingEveryChoice) {
  EXPECT_NEAR(nodes_reached(12, 2, 4, 2, 3), nodes_reached_by_listing(12, 2, 4, 2, 3), 1e-12);
  EXPECT_NEAR(nodes_reached(12, 3, 6, 3, 4), nodes_reached_by_listing(12, 3, 6, 3, 4), 1e-12);
  EXPECT_NEAR(nodes_reached(16, 3, 4, 2, 2), nodes_reached_by_listing(16, 3, 4, 2, 2), 1e-12);  // 2 groups a node
  EXPECT_NEAR(nodes_reached(16, 3, 2, 1, 4), nodes_reached_by_listing(16, 3, 2, 1, 4), 1e-12);  // a group over 2 nodes
  // A token of one group of 3 experts reaches 1 or 2 nodes of 4 experts.
  const double one_group = nodes_reached(12, 2, 4, 1, 3);
  EXPECT_GT(one_group, 1.0);
  EXPECT_LT(one_group, 2.0);
}

// One DeepSeek-V3-shaped MoE layer (256 experts, top 8, 8 groups of which 4 per token), 1
// sequence of 16 tokens, h 64: the dispatch sends 16 x 8 copies x 64 x 2 bytes = 16384 bytes
// (tp 1). The graph is kept alive beside the op it holds.
struct DeepSeekLayer {
  sm::ModelSpec m = sm::parse_model_yaml(
      "name: r\nlayers: 1\nhidden: 64\nheads: 4\nvocab: 100\nseq_len: 16\nactivation: swiglu\n"
      "norm: rmsnorm\nmoe: {experts: 256, top_k: 8, expert_ffn: 32, groups: 8, max_groups_per_token: 4}\n",
      "r.yaml");
  sm::ModelGraph g = sm::ModelGraph::build(m, 1);
  const sm::Op& up() const {
    for (std::size_t v = 0; v < g.num_ops(); ++v)
      if (g.op(v).name == "layer1.expert_up") return g.op(v);
    throw std::runtime_error("no layer1.expert_up");
  }
};

TEST(NodeLimitedRouting, DispatchBytesAcrossNodesPerPlacement) {
  const DeepSeekLayer d;
  const sm::ModelSpec& m = d.m;
  const sm::Op* up = &d.up();
  sc::ExpertLayout l;
  l.ep = 8, l.ep_nodes = 1;  // ep inside one node
  EXPECT_EQ(sc::dispatch_bytes(*up, l, 2.0, &*m.moe).all_to_all, 16384.0);
  EXPECT_EQ(sc::dispatch_bytes(*up, l, 2.0, &*m.moe).inter_node, 0.0);
  l.ep = 64, l.ep_nodes = 8;  // ep over 8 nodes, per-copy all-to-all: 16384 x 7/8 = 14336
  EXPECT_DOUBLE_EQ(sc::dispatch_bytes(*up, l, 2.0, &*m.moe).inter_node, 14336.0);
  // Once per node, limited: 16 tokens x 3.17538 sends x 64 x 2 bytes = 16384 x 3.17538 / 8
  // = 6503.2 bytes.
  l.once_per_node = true;
  EXPECT_NEAR(sc::dispatch_bytes(*up, l, 2.0, &*m.moe).inter_node, 6503.2, 0.1);
  sm::MoeSpec unlimited = *m.moe;
  unlimited.groups = 0, unlimited.max_groups_per_token = 0;
  // 16384 x 4.63282 / 8 = 9488.0 bytes
  EXPECT_NEAR(sc::dispatch_bytes(*up, l, 2.0, &unlimited).inter_node, 9488.0, 0.1);
}

// A once-per-node dispatcher (DeepEP's normal kernels, stack moe_dispatcher: deepep) over
// an ep group of 8 nodes x 8 ranks: its all-to-all is two legs run together, the sends to
// other nodes (6503.2 bytes with the limit, above) over one rank per node, and the
// forwarding of the whole send buffer (16384 bytes) over the 8 ranks of a node; the slower
// leg sets the time. On the toy cluster (25 GB/s across, 300 GB/s inside) the network leg
// is the slower one, and the exchange beats the per-copy all-to-all of the 64 ranks.
TEST(NodeLimitedRouting, OncePerNodeDispatchIsTheSlowerOfItsTwoLegs) {
  const DeepSeekLayer d;
  const sm::ModelSpec& m = d.m;
  const sm::Op* up = &d.up();
  const sc::CollectiveCost coll(sc::testing::toy_cluster());
  const sc::PlacedGroup ep{64, 8, 8}, none{1, 1, 1};
  sc::ExpertLayout per_copy;
  per_copy.ep = 64, per_copy.ep_nodes = 8;
  sc::ExpertLayout once = per_copy;
  once.once_per_node = true;
  const sc::DispatchTime a = sc::dispatch_time(coll, *up, per_copy, ep, none, 2.0, &*m.moe);
  const sc::DispatchTime b = sc::dispatch_time(coll, *up, once, ep, none, 2.0, &*m.moe);
  // The per-copy exchange is the plain all-to-all of the 64 ranks.
  EXPECT_DOUBLE_EQ(a.fwd_s, coll.time_s(sc::Collective::AllToAll, 16384.0, ep));
  // Network leg: an all-to-all of 8 ranks (one per node) moves 7/8 of its buffer, so a buffer
  // of 6503.2 x 8/7 bytes moves exactly the 6503.2 bytes that leave the node.
  const double rdma = coll.time_s(sc::Collective::AllToAll, 6503.2 * 8.0 / 7.0, sc::PlacedGroup{8, 8, 1});
  const double nvlink = coll.time_s(sc::Collective::AllToAll, 16384.0, sc::PlacedGroup{8, 1, 8});
  EXPECT_GT(rdma, nvlink);
  EXPECT_NEAR(b.fwd_s, rdma, 1e-6 * rdma);
  EXPECT_DOUBLE_EQ(b.bwd_s, b.fwd_s);
  EXPECT_LT(b.fwd_s, a.fwd_s);
  // Inside one node there is no network leg: the same all-to-all either way.
  sc::ExpertLayout in_node = once;
  in_node.ep = 8, in_node.ep_nodes = 1;
  const sc::PlacedGroup node{8, 1, 8};
  EXPECT_DOUBLE_EQ(sc::dispatch_time(coll, *up, in_node, node, none, 2.0, &*m.moe).fwd_s,
                   coll.time_s(sc::Collective::AllToAll, 16384.0, node));
}

// Megatron-Core's allgather dispatcher (stack moe_dispatcher: allgather): the dispatch
// all-gathers every token of the etp x ep group once, with its routing, and the combine
// reduce-scatters the outputs; the backward swaps them. By hand for the layer above on ep 4 x
// etp 2 (8 ranks in a node): the rank's 16 tokens x 64 x 2 bytes = 2048 gathered from 8 ranks
// = 16384 bytes, whatever top_k (the all-to-all sends 8 copies of each); the routing, 256
// probabilities (2 bytes) and 256 map entries (1 byte) per token, 16 x 768 x 8 = 98304 bytes.
TEST(AllGatherDispatcher, GathersEveryTokenOnceWithItsRouting) {
  const DeepSeekLayer d;
  const sm::ModelSpec& m = d.m;
  const sm::Op* up = &d.up();
  sc::ExpertLayout l;
  l.ep = 4, l.etp = 2, l.all_gather = true;
  l.tp_ep = sc::PlacedGroup{8, 1, 8};
  const sc::DispatchBytes b = sc::dispatch_bytes(*up, l, 2.0, &*m.moe);
  EXPECT_DOUBLE_EQ(b.token_gather, 16384.0);
  EXPECT_DOUBLE_EQ(b.routing_gather, 98304.0);
  EXPECT_EQ(b.all_to_all, 0.0);  // no all-to-all, no etp gather beside it
  EXPECT_EQ(b.etp_gather, 0.0);
  const sc::CollectiveCost coll(sc::testing::toy_cluster());
  const sc::PlacedGroup none{1, 1, 1};
  const sc::DispatchTime t = sc::dispatch_time(coll, *up, l, none, none, 2.0, &*m.moe);
  EXPECT_DOUBLE_EQ(t.fwd_s, coll.time_s(sc::Collective::AllGather, 16384.0 + 98304.0, l.tp_ep));
  EXPECT_DOUBLE_EQ(t.bwd_s, coll.time_s(sc::Collective::ReduceScatter, 16384.0, l.tp_ep));
  // One rank: nothing to exchange.
  l.ep = 1, l.etp = 1;
  EXPECT_EQ(sc::dispatch_time(coll, *up, l, none, none, 2.0, &*m.moe).fwd_s, 0.0);
}

// The group it gathers over is etp x ep consecutive ranks (Megatron-Core's tp_ep group under
// parallel folding): on 8-GPU nodes, etp 2 x ep 8 spans two nodes, 8 ranks on each.
TEST(AllGatherDispatcher, ItsGroupIsTheEtpTimesEpRanks) {
  const sc::RankGrid grid(8, 4, 1);  // dp 8 x tp 4: 32 ranks, one stage
  const std::vector<int> g = sc::expert_group_ranks(grid, 8, 2, sc::ExpertAxis::EtpEp, 0);
  ASSERT_EQ(g.size(), 16u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(g[static_cast<std::size_t>(i)], i);
  const sc::PlacedGroup p = sc::placed_expert_group(grid, 8, 2, sc::ExpertAxis::EtpEp, 8);
  EXPECT_EQ(p.size, 16);
  EXPECT_EQ(p.nodes_spanned, 2);
  EXPECT_EQ(p.ranks_per_node_in_group, 8);
}

}  // namespace
