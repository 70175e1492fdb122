// Multi-token prediction (ModelSpec::mtp_layers): parameters, FLOPs and activations of the
// MTP depths by hand, the graph against the closed forms, and the YAML / config.json keys.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "common/errors.h"
#include "models/model_graph.h"
#include "models/model_spec.h"
#include "models/model_stats.h"
#include "tests/models/model_test_util.h"

using namespace strata::models;

namespace {

using strata::models::testing::message_of;

// 2 blocks (the first dense, the second MoE), h = 64, 4 heads, SwiGLU, RMSNorm, 4 experts of
// 32, top-2, untied vocab of 100, 16 tokens, one MTP depth.
ModelSpec tiny_mtp(std::int64_t mtp_layers = 1) {
  return parse_model_yaml("name: tiny-mtp\nlayers: 2\nhidden: 64\nheads: 4\nffn: 256\nvocab: 100\n"
                          "seq_len: 16\nactivation: swiglu\nnorm: rmsnorm\ntied_embeddings: false\n"
                          "moe: {experts: 4, top_k: 2, expert_ffn: 32, first_dense_layers: 1}\n"
                          "mtp_layers: " + std::to_string(mtp_layers) + "\n",
                          "tiny-mtp.yaml");
}

TEST(MtpModel, TinyDepthParamsByHand) {
  const ModelSpec m = tiny_mtp();
  ASSERT_TRUE(m.mtp_block_is_moe());  // built like the last block (MoE)
  // attention: Q, K, V 64 x 192 + out 64 x 64 = 16384; MoE MLP: router 64 x 4 = 256 +
  // 4 experts x 3 x 64 x 32 = 24576; 2 block RMSNorms 128: block = 41344.
  // MTP depth: + enorm, hnorm, final norm 3 x 64 + eh_proj 128 x 64 = 8192 -> 49728.
  EXPECT_EQ(mtp_depth_params(m), 49728.0);
  EXPECT_EQ(mtp_params(m), 49728.0);
  EXPECT_EQ(total_params(m) - main_model_params(m), 49728.0);
  // Active: router 256 + 2 of the 4 experts 12288 -> block 29056; + 192 + 8192 = 37440.
  EXPECT_EQ(active_params(m) - main_model_active_params(m), 37440.0);
  // Nothing else moves: the main model is the model without MTP.
  EXPECT_EQ(main_model_params(m), total_params(tiny_mtp(0)));
  // The graph (a different path) agrees, and puts the depth in the head group.
  const ModelGraph g = ModelGraph::build(m, 1);
  EXPECT_DOUBLE_EQ(g.total_params(), total_params(m));
  EXPECT_DOUBLE_EQ(g.active_params(), active_params(m));
  const ModelGraph g0 = ModelGraph::build(tiny_mtp(0), 1);
  EXPECT_EQ(g.groups().size(), g0.groups().size());
  EXPECT_EQ(g.groups().back().params - g0.groups().back().params, 49728.0);
}

TEST(MtpModel, TinyDepthFlopsByHand) {
  const ModelSpec m = tiny_mtp();
  // One sequence, t = 16 tokens. Forward of the MTP depth:
  //   attention GEMMs 2 x 16 x 16384 = 524288; core 4 x 16 x 16 x 64 = 65536;
  //   router 2 x 16 x 64 x 4 = 8192; 2 routed experts 2 x (2 x 16 x 3 x 64 x 32) = 393216;
  //   eh_proj 2 x 16 x 128 x 64 = 262144; its LM head 2 x 16 x 64 x 100 = 204800.
  //   = 1458176, x 3 (forward + backward) = 4374528.
  EXPECT_EQ(model_flops_per_iteration(m, 1) - model_flops_per_iteration(tiny_mtp(0), 1), 4374528.0);
  const ModelGraph g = ModelGraph::build(m, 1);
  EXPECT_DOUBLE_EQ(g.total_flops_fwd() + g.total_flops_bwd(), model_flops_per_iteration(m, 1));
  // Full recompute re-runs the main blocks only (the MTP depth keeps its activations).
  EXPECT_EQ(training_flops(m, 1, true) - training_flops(m, 1, false),
            training_flops(tiny_mtp(0), 1, true) - training_flops(tiny_mtp(0), 1, false));
}

TEST(MtpModel, TinyDepthActivationsByHand) {
  const ModelSpec m = tiny_mtp();
  // t = 16, h = 64, V = 100. The MoE block: per token 10h + 2q + 4kv + 2q = 1152 and
  // 4 x 4 experts + 2 x (2h + 6 x 32 + 2h) = 912, x 16 = 33024; scores 5 x 4 x 16^2 = 5120:
  // 38144. The depth adds enorm + hnorm inputs 4th = 4096, eh_proj input 4th = 4096,
  // final-norm + LM-head inputs 4th = 4096, fp32 logits 4tV = 6400: 56832.
  EXPECT_EQ(mtp_depth_activation_bytes(m, 1), 56832.0);
  const ModelGraph g = ModelGraph::build(m, 1);
  const ModelGraph g0 = ModelGraph::build(tiny_mtp(0), 1);
  EXPECT_EQ(g.groups().back().activation_bytes - g0.groups().back().activation_bytes, 56832.0);
}

TEST(MtpModel, DeepSeekV3CatalogTrainsOneDepth) {
  const ModelSpec m = load_model("deepseek-v3");
  ASSERT_EQ(m.mtp_layers, 1);
  // DeepSeek-V3's MTP depth (config.json: h 7168, 256 experts of 2048, 1 shared, MLA):
  //   MLA attention 187107328 (moe_model_test, by hand), MoE MLP: router 7168 x 256 =
  //   1835008 + 256 x 3 x 7168 x 2048 = 11274289152 + shared 3 x 7168 x 2048 = 44040192;
  //   2 norms 14336: block 11507286016; + 3 norms 21504 + eh_proj 2 x 7168^2 = 102760448
  //   = 11610067968 of its own.
  EXPECT_EQ(mtp_params(m), 11610067968.0);
  // The published checkpoint stores the depth with copies of the embedding and the head
  // (model.layers.61.embed_tokens, shared_head.head: 2 x 129280 x 7168 = 1853358080), so
  // its "14B" MTP weights are 13463426048, and its 685B total = 671B main + those.
  EXPECT_LT(std::fabs(main_model_params(m) / 671e9 - 1), 0.005) << main_model_params(m);
  EXPECT_LT(std::fabs((main_model_params(m) + mtp_params(m) + 2 * 129280.0 * 7168) / 685e9 - 1), 0.001);
}

TEST(MtpModel, YamlKeyRoundTripsAndIsChecked) {
  const ModelSpec m = tiny_mtp(2);
  EXPECT_EQ(m.mtp_layers, 2);
  EXPECT_EQ(parse_model_yaml(to_yaml(m), "again.yaml"), m);
  EXPECT_EQ(to_yaml(tiny_mtp(0)).find("mtp_layers"), std::string::npos);  // unchanged YAML without it
  EXPECT_CONTAINS(message_of([] { tiny_mtp(-1); }), "mtp_layers (-1) must be in 0 ..");
}

}  // namespace
