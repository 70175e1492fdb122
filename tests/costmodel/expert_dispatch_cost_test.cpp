// Expert parallelism in the cost model: per-expert GEMM shapes, dispatch / combine bytes
// and their placement, the Megatron-Core folded expert groups, memory per rank with ep.
#include "costmodel/expert_dispatch_cost.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/memory_model.h"
#include "models/model_graph.h"
#include "models/model_spec.h"

namespace sc = strata::costmodel;
namespace sm = strata::models;
using sc::ExpertAxis;
using sc::ExpertLayout;
using sc::PlacedGroup;

namespace {

// 3 blocks (first dense), h 64, SwiGLU, 4 experts of 32 (top-2), one shared expert of 48.
sm::ModelSpec tiny_moe() {
  return sm::parse_model_yaml(
      "name: tiny-moe\nlayers: 3\nhidden: 64\nheads: 4\nffn: 256\nvocab: 100\nseq_len: 16\n"
      "activation: swiglu\nnorm: rmsnorm\ntied_embeddings: false\n"
      "moe: {experts: 4, top_k: 2, expert_ffn: 32, shared_experts: 1, shared_expert_ffn: 48, "
      "first_dense_layers: 1}\n",
      "tiny-moe.yaml");
}

const sm::Op& op_named(const sm::ModelGraph& g, const std::string& name) {
  for (std::size_t v = 0; v < g.num_ops(); ++v)
    if (g.op(v).name == name) return g.op(v);
  throw std::runtime_error("no op " + name);
}

ExpertLayout layout(int tp, int ep, int etp, double factor = 1.0) {
  ExpertLayout l;
  l.tp = tp, l.sequence_parallel = tp > 1, l.ep = ep, l.etp = etp, l.tokens_factor = factor;
  return l;
}

}  // namespace

TEST(ExpertGemmShape, PerExpertShapesByHand) {
  const sm::ModelGraph g = sm::ModelGraph::build(tiny_moe(), 3);  // 48 tokens, 96 routed copies
  const sm::Op& up = op_named(g, "layer2.expert_up");
  const sm::Op& down = op_named(g, "layer2.expert_down");
  // One rank holds all 4 experts, 24 tokens each.
  EXPECT_EQ(sc::expert_gemm_shape(up, layout(1, 1, 1)), (sc::ExpertGemmShape{24, 32, 64, 4}));
  // ep 2: 2 experts per rank; each gets the copies of both ranks' tokens: 48.
  EXPECT_EQ(sc::expert_gemm_shape(up, layout(1, 2, 1)), (sc::ExpertGemmShape{48, 32, 64, 2}));
  // tp 2 (sequence parallel: 24 tokens, 48 copies per rank), ep 2, etp 2: the etp pair
  // gathers its tokens, so 48 * 2 * 2 / 4 = 48 per expert, half the width each.
  EXPECT_EQ(sc::expert_gemm_shape(up, layout(2, 2, 2)), (sc::ExpertGemmShape{48, 16, 64, 2}));
  EXPECT_EQ(sc::expert_gemm_shape(down, layout(2, 2, 2)), (sc::ExpertGemmShape{48, 64, 16, 2}));
  // Imbalance 1.5: the busiest expert gets 36 of the mean 24.
  EXPECT_EQ(sc::expert_gemm_shape(up, layout(1, 1, 1, 1.5)).m, 36);
  EXPECT_THROW(sc::expert_gemm_shape(up, layout(1, 3, 1)), strata::InputError);
  EXPECT_THROW(sc::expert_gemm_shape(down, layout(1, 1, 3)), strata::InputError);
}

TEST(ExpertGemmShape, SmallExpertsRunAtTheSmallGemmEfficiency) {
  // The grouped GEMM is timed per expert: 4 experts of m = 24 take 4x one GEMM of 24 rows.
  const sm::ModelGraph g = sm::ModelGraph::build(tiny_moe(), 3);
  const sm::Op& up = op_named(g, "layer2.expert_up");
  const sc::ClusterSpec c = sc::load_cluster("dgx-h100");
  const sc::GemmCost gemm(c.device);
  const sc::OpTime t = sc::expert_gemm_time(gemm, up, layout(1, 1, 1), sc::DType::Bf16);
  EXPECT_DOUBLE_EQ(t.fwd_s, 4 * gemm.estimate(24, 32, 64, sc::DType::Bf16).time_s);
  EXPECT_DOUBLE_EQ(t.bwd_s, 4 * (gemm.estimate(24, 64, 32, sc::DType::Bf16).time_s +
                                 gemm.estimate(64, 32, 24, sc::DType::Bf16).time_s));
}

TEST(DispatchBytes, ByHandPerLayout) {
  const sm::ModelGraph g = sm::ModelGraph::build(tiny_moe(), 3);
  const sm::Op& up = op_named(g, "layer2.expert_up");
  // 48 tokens x top-2 x 64 hidden x 2 bytes.
  EXPECT_DOUBLE_EQ(up.ep_comm_bytes, 48.0 * 2 * 64 * 2);
  const auto one = sc::dispatch_bytes(up, layout(1, 1, 1));
  EXPECT_EQ(one.all_to_all, 0.0);  // no exchange without ep
  EXPECT_EQ(one.etp_gather, 0.0);
  EXPECT_DOUBLE_EQ(one.permute, 2 * 12288.0);
  const auto ep4 = sc::dispatch_bytes(up, layout(1, 4, 1));
  EXPECT_DOUBLE_EQ(ep4.all_to_all, 12288.0);
  // tp 2 with SP: each rank sends its 24 tokens' copies; etp 2 gathers two ranks' worth.
  const auto mixed = sc::dispatch_bytes(up, layout(2, 2, 2));
  EXPECT_DOUBLE_EQ(mixed.all_to_all, 6144.0);
  EXPECT_DOUBLE_EQ(mixed.etp_gather, 12288.0);
  // fp32 activations double every byte; imbalance 2 doubles the busiest rank's exchange.
  EXPECT_DOUBLE_EQ(sc::dispatch_bytes(up, layout(1, 4, 1), 4.0).all_to_all, 24576.0);
  EXPECT_DOUBLE_EQ(sc::dispatch_bytes(up, layout(1, 4, 1, 2.0)).all_to_all, 24576.0);
}

TEST(DispatchTime, CostedByPlacement) {
  const sc::ClusterSpec c = sc::load_cluster("dgx-h100");
  const sc::CollectiveCost coll(c);
  const sm::ModelGraph g = sm::ModelGraph::build(tiny_moe(), 3);
  const sm::Op& up = op_named(g, "layer2.expert_up");
  const sm::Op& down = op_named(g, "layer2.expert_down");
  const double bytes = 12288.0;
  const PlacedGroup inside{8, 1, 8}, across{8, 8, 1}, one{1, 1, 1};
  const auto in = sc::dispatch_time(coll, up, layout(1, 8, 1), inside, one);
  const auto out = sc::dispatch_time(coll, up, layout(1, 8, 1), across, one);
  // Forward and backward are one all-to-all of the send buffer each, on the group's links.
  EXPECT_DOUBLE_EQ(in.fwd_s, coll.time_s(sc::Collective::AllToAll, bytes, inside));
  EXPECT_DOUBLE_EQ(in.bwd_s, in.fwd_s);
  EXPECT_DOUBLE_EQ(out.fwd_s, coll.time_s(sc::Collective::AllToAll, bytes, across));
  EXPECT_GT(out.fwd_s, 2 * in.fwd_s);  // across nodes: the network, not NVLink
  // With etp 2: all-gather after the all-to-all (forward dispatch), reduce-scatter before
  // it in the combine; the backward runs them the other way.
  const PlacedGroup pair{2, 1, 2};
  const auto d = sc::dispatch_time(coll, up, layout(2, 2, 2), pair, pair);
  const auto k = sc::dispatch_time(coll, down, layout(2, 2, 2), pair, pair);
  const double a2a = coll.time_s(sc::Collective::AllToAll, 6144.0, pair);
  const double ag = coll.time_s(sc::Collective::AllGather, 12288.0, pair);
  const double rs = coll.time_s(sc::Collective::ReduceScatter, 12288.0, pair);
  EXPECT_DOUBLE_EQ(d.fwd_s, a2a + ag);
  EXPECT_DOUBLE_EQ(d.bwd_s, rs + a2a);
  EXPECT_DOUBLE_EQ(k.fwd_s, rs + a2a);
  EXPECT_DOUBLE_EQ(k.bwd_s, a2a + ag);
}

TEST(ExpertGroups, MegatronFoldingByHand) {
  // tp 2, dp 4, pp 2: 8 ranks per stage, rank = tp_i + 2 dp_i + 8 pp_i.
  const sc::RankGrid grid(4, 2, 2);
  // ep 4, etp 1: stage-local index = ep_i + 4 edp_i.
  EXPECT_EQ(sc::expert_group_ranks(grid, 4, 1, ExpertAxis::Ep, 5), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(sc::expert_group_ranks(grid, 4, 1, ExpertAxis::Edp, 5), (std::vector<int>{1, 5}));
  // ep 2, etp 2: index = etp_i + 2 (ep_i + 2 edp_i); rank 5 = (etp 1, ep 0, edp 1).
  EXPECT_EQ(sc::expert_group_ranks(grid, 2, 2, ExpertAxis::Etp, 5), (std::vector<int>{4, 5}));
  EXPECT_EQ(sc::expert_group_ranks(grid, 2, 2, ExpertAxis::Ep, 5), (std::vector<int>{5, 7}));
  EXPECT_EQ(sc::expert_group_ranks(grid, 2, 2, ExpertAxis::Edp, 5), (std::vector<int>{1, 5}));
  // The second pipeline stage is the same pattern 8 ranks on.
  EXPECT_EQ(sc::expert_group_ranks(grid, 2, 2, ExpertAxis::Ep, 13), (std::vector<int>{13, 15}));
  // Placement: ep 8 over 2 nodes of 4 GPUs vs inside one node of 8.
  const sc::RankGrid big(8, 1, 1);
  EXPECT_EQ(sc::placed_expert_group(big, 8, 1, ExpertAxis::Ep, 8), (PlacedGroup{8, 1, 8}));
  EXPECT_EQ(sc::placed_expert_group(big, 8, 1, ExpertAxis::Ep, 4), (PlacedGroup{8, 2, 4}));
  EXPECT_THROW(sc::expert_group_ranks(grid, 3, 1, ExpertAxis::Ep, 0), strata::InputError);
  EXPECT_THROW(sc::expert_group_ranks(sc::RankGrid(4, 2, 2, "dp-tp-pp"), 2, 1, ExpertAxis::Ep, 0),
               strata::InputError);
}

// placed_expert_group places the groups as strided runs without listing them: it must
// agree with listing every rank's group and placing it (the definition).
TEST(ExpertGroups, WorstPlacementMatchesABruteForceScanOfEveryRank) {
  auto worse = [](const PlacedGroup& a, const PlacedGroup& b) {
    return a.nodes_spanned != b.nodes_spanned ? a.nodes_spanned > b.nodes_spanned
                                              : a.ranks_per_node_in_group < b.ranks_per_node_in_group;
  };
  int cases = 0;
  for (int dp : {1, 2, 3, 4, 6, 16})
    for (int tp : {1, 2, 4, 6})
      for (int pp : {1, 2, 3})
        for (int cp : {1, 2})
          for (int gpn : {1, 4, 6, 8})
            for (int ep = 1; ep <= tp * cp * dp; ++ep)
              for (int etp = 1; etp <= tp; ++etp) {
                if ((tp * cp * dp) % (ep * etp) != 0) continue;
                const sc::RankGrid g(dp, tp, pp, "tp-dp-pp", cp);
                for (ExpertAxis a : {ExpertAxis::Etp, ExpertAxis::Ep, ExpertAxis::Edp}) {
                  PlacedGroup want;
                  for (int r = 0; r < g.world_size(); ++r) {
                    const PlacedGroup p = sc::placed_ranks(sc::expert_group_ranks(g, ep, etp, a, r), gpn);
                    if (r == 0 || worse(p, want)) want = p;
                  }
                  ASSERT_EQ(sc::placed_expert_group(g, ep, etp, a, gpn), want)
                      << "dp " << dp << " tp " << tp << " cp " << cp << " pp " << pp << " gpn " << gpn << " ep " << ep
                      << " etp " << etp << " axis " << static_cast<int>(a);
                  ++cases;
                }
              }
  EXPECT_GT(cases, 1000);
}

TEST(ExpertGroups, GrokStyleCp2Ep8Etp4Tp4PlacedByHand) {
  // tp 4, cp 2, dp 4, pp 2 on nodes of 8 GPUs: 32 ranks per stage, 64 in all.
  // Attention (Megatron-Core tp-cp-dp-pp): rank = tp_i + 4 cp_i + 8 dp_i + 32 pp_i.
  const sc::RankGrid grid(4, 4, 2, "tp-dp-pp", 2);
  ASSERT_TRUE(sc::expert_folding_order(grid));
  EXPECT_EQ(grid.group_ranks(sc::Axis::Tp, 0), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(grid.group_ranks(sc::Axis::Cp, 0), (std::vector<int>{0, 4}));
  EXPECT_EQ(grid.group_ranks(sc::Axis::Dp, 0), (std::vector<int>{0, 8, 16, 24}));
  // Experts: ep 8 x etp 4 = 32 = the whole stage, edp 1; index = etp_i + 4 ep_i.
  EXPECT_EQ(sc::expert_group_ranks(grid, 8, 4, ExpertAxis::Etp, 0), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(sc::expert_group_ranks(grid, 8, 4, ExpertAxis::Ep, 0),
            (std::vector<int>{0, 4, 8, 12, 16, 20, 24, 28}));
  EXPECT_EQ(sc::expert_group_ranks(grid, 8, 4, ExpertAxis::Edp, 0), (std::vector<int>{0}));
  // Rank 37 = stage 1, local 5 = (etp 1, ep 1): the same pattern 32 ranks on.
  EXPECT_EQ(sc::expert_group_ranks(grid, 8, 4, ExpertAxis::Ep, 37),
            (std::vector<int>{33, 37, 41, 45, 49, 53, 57, 61}));
  // Placement (node = rank / 8): etp inside one node like tp; the ep group takes the 2 cp
  // ranks of each of nodes 0..3 (the dp x cp ranks of one tp index): 4 nodes, 2 per node;
  // the dp group 4 nodes, 1 per node.
  EXPECT_EQ(sc::placed_expert_group(grid, 8, 4, ExpertAxis::Etp, 8), (PlacedGroup{4, 1, 4}));
  EXPECT_EQ(sc::placed_expert_group(grid, 8, 4, ExpertAxis::Ep, 8), (PlacedGroup{8, 4, 2}));
  EXPECT_EQ(sc::placed_expert_group(grid, 8, 4, ExpertAxis::Edp, 8), (PlacedGroup{1, 1, 1}));
  EXPECT_EQ(sc::placed_group(grid, sc::Axis::Dp, 8), (PlacedGroup{4, 4, 1}));
  // ep 4, etp 2 on the same grid: edp = 32 / 8 = 4, index = etp_i + 2 (ep_i + 4 edp_i).
  // Rank 13 = (tp 1, cp 1, dp 1) for attention, (etp 1, ep 2, edp 1) for the experts: its
  // ep group mixes tp ranks 1, 3 and cp ranks 0, 1 (9 = tp 1 cp 0 dp 1, 15 = tp 3 cp 1 dp 1).
  EXPECT_EQ(sc::expert_group_ranks(grid, 4, 2, ExpertAxis::Etp, 13), (std::vector<int>{12, 13}));
  EXPECT_EQ(sc::expert_group_ranks(grid, 4, 2, ExpertAxis::Ep, 13), (std::vector<int>{9, 11, 13, 15}));
  EXPECT_EQ(sc::expert_group_ranks(grid, 4, 2, ExpertAxis::Edp, 13), (std::vector<int>{5, 13, 21, 29}));
  // ep x etp must divide tp x cp x dp (32), and cp must sit next to tp.
  EXPECT_THROW(sc::expert_group_ranks(grid, 8, 8, ExpertAxis::Ep, 0), strata::InputError);
  EXPECT_THROW(sc::expert_group_ranks(sc::RankGrid(4, 4, 2, "tp-dp-cp-pp", 2), 8, 4, ExpertAxis::Ep, 0),
               strata::InputError);
  EXPECT_TRUE(sc::expert_folding_order(sc::RankGrid(4, 4, 2, "tp-cp-dp-pp", 2)));
}

TEST(ExpertMemory, ParamsAndOptimizerPerRankWithEpByHand) {
  const sm::ModelGraph g = sm::ModelGraph::build(tiny_moe(), 1);
  sc::DeviceProfile dev = sc::load_cluster("dgx-h100").device;
  dev.reserve_gib = 0;
  const sc::MemoryModel mm(g, dev);
  // Routed experts: 2 MoE layers x 4 experts x 3*64*32 = 49152; everything else 130496.
  const double expert = 2 * 4 * 3 * 64.0 * 32, total = 179648, dense = total - expert;
  sc::MemoryInputs in;
  in.dp = 4, in.ep = 2, in.zero = 1;
  const auto m = mm.per_stage(in);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_DOUBLE_EQ(m[0].params, dense + expert / 2);
  EXPECT_DOUBLE_EQ(m[0].expert_params, expert / 2);
  EXPECT_DOUBLE_EQ(m[0].weights_bytes, 2 * (dense + expert / 2));
  // ZeRO-1: dense optimizer state over dp = 4, expert state over edp = 4 / 2 = 2.
  EXPECT_DOUBLE_EQ(m[0].optimizer_bytes, 12 * (dense / 4 + expert / 2 / 2));
  in.ep = 4;
  in.zero = 0;
  EXPECT_DOUBLE_EQ(mm.per_stage(in)[0].params, dense + expert / 4);
  in.ep = 3;
  EXPECT_THROW(mm.per_stage(in), strata::InputError);
}

TEST(ExpertMemory, Fp8WeightCopiesOfExpertsSplitOverEpAndEdp) {
  const sm::ModelGraph g = sm::ModelGraph::build(tiny_moe(), 1);
  sc::DeviceProfile dev = sc::load_cluster("dgx-h100").device;
  dev.reserve_gib = 0;
  const sc::MemoryModel mm(g, dev);
  // FP8-run weights (fp8_linear.h), one stage, tp 1:
  //   dense block: qkv 64x192 + out 64x64 + SwiGLU 3 x 64x256 = 12288 + 4096 + 49152 = 65536
  //   MoE blocks (2): attention 16384 + shared expert 3 x 64x48 = 9216 -> 2 x 25600 = 51200
  //   routed experts: 2 blocks x 4 experts x 3 x 64x32 = 49152, over ep 2: 24576
  // Each FP8 weight keeps kFp8WeightCopyBytes = 2 bytes (weight_fp8 + its transpose).
  const double dense_fp8 = 65536 + 51200, expert_fp8 = 49152;
  sc::MemoryInputs in;
  in.dp = 2, in.ep = 2;
  const double bf16 = mm.per_stage(in)[0].weights_bytes;
  in.fp8_weights = true;
  EXPECT_DOUBLE_EQ(mm.per_stage(in)[0].weights_bytes - bf16, 2 * (dense_fp8 + expert_fp8 / 2));
  // ZeRO-3: the dense copies over dp 2, the experts' over edp = 2 / 2 = 1.
  in.zero = 3;
  const double z3_fp8 = mm.per_stage(in)[0].weights_bytes;
  in.fp8_weights = false;
  EXPECT_DOUBLE_EQ(z3_fp8 - mm.per_stage(in)[0].weights_bytes, 2 * (dense_fp8 / 2 + expert_fp8 / 2));
}

TEST(ExpertMemory, MoeLayerActivationsByHand) {
  const sm::ModelSpec m = tiny_moe();
  // Dense block (layer 1), tp 1, no recompute, unfused scores (5 bytes): Korthikanti terms.
  const double s = 16, h = 64, a = 4;
  const double dense = s * (10 * h + 2 * h + 4 * h + 2 * h + 6 * 256) + 5 * a * s * s;
  EXPECT_DOUBLE_EQ(sc::layer_activation_bytes(m, 1, 1, false, sc::RecomputeMode::None, 5.0, 1), dense);
  // MoE block: the shared expert's 6*48 replaces 6*256; routed: 4*E + top_k*(4h + 6*32).
  const double moe = s * (10 * h + 2 * h + 4 * h + 2 * h + 6 * 48) + 5 * a * s * s +
                     s * (4 * 4 + 2 * (4 * h + 6 * 32));
  EXPECT_DOUBLE_EQ(sc::layer_activation_bytes(m, 1, 1, false, sc::RecomputeMode::None, 5.0, 2), moe);
  // etp 2 halves the expert width part only.
  const double moe_etp2 = moe - s * 2 * (6 * 32) / 2;
  EXPECT_DOUBLE_EQ(sc::layer_activation_bytes(m, 1, 1, false, sc::RecomputeMode::None, 5.0, 2, 2), moe_etp2);
}
