// Mixture-of-experts and latent-attention model specs: parameter, FLOP and activation
// counts by hand, the graph against the closed forms, and the YAML format.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "common/errors.h"
#include "tests/models/model_test_util.h"
#include "models/model_graph.h"
#include "models/model_spec.h"
#include "models/model_stats.h"

using namespace strata::models;
using strata::InputError;

namespace {

using strata::models::testing::message_of;

// 3 blocks (the first dense), h = 64, 4 heads, SwiGLU, 4 experts of 32, top-2, one
// shared expert of 48, untied vocab of 100.
const char* kTinyMoe =
    "name: tiny-moe\n"
    "layers: 3\n"
    "hidden: 64\n"
    "heads: 4\n"
    "ffn: 256\n"
    "vocab: 100\n"
    "seq_len: 16\n"
    "activation: swiglu\n"
    "norm: rmsnorm\n"
    "tied_embeddings: false\n"
    "moe: {experts: 4, top_k: 2, expert_ffn: 32, shared_experts: 1, shared_expert_ffn: 48,\n"
    "      first_dense_layers: 1}\n";

ModelSpec tiny_moe() { return parse_model_yaml(kTinyMoe, "tiny-moe.yaml"); }

}  // namespace

TEST(MoeModel, TinyMoeParamsByHand) {
  const ModelSpec m = tiny_moe();
  // Attention 4h^2 = 16384, two RMSNorms 128, dense SwiGLU MLP 3*64*256 = 49152.
  EXPECT_EQ(layer_params(m, 1), 16384.0 + 128 + 49152);
  // MoE layer: router 64*4 = 256, 4 experts of 3*64*32 = 6144, shared 3*64*48 = 9216.
  EXPECT_EQ(moe_mlp_params(m), 256.0 + 4 * 6144 + 9216);
  EXPECT_EQ(moe_mlp_active_params(m), 256.0 + 2 * 6144 + 9216);
  EXPECT_EQ(layer_params(m, 2), 16384.0 + 128 + 34048);
  EXPECT_EQ(layer_active_params(m, 3), 16384.0 + 128 + 21760);
  // Embedding 6400 + LM head 6400 + final norm 64.
  EXPECT_EQ(total_params(m), 65664.0 + 2 * 50560 + 12864);
  EXPECT_EQ(active_params(m), 65664.0 + 2 * 38272 + 12864);
}

TEST(MoeModel, GraphTotalsEqualClosedForms) {
  for (const std::int64_t mb : {1, 3}) {
    const ModelSpec m = tiny_moe();
    const ModelGraph g = ModelGraph::build(m, mb);
    EXPECT_DOUBLE_EQ(g.total_params(), total_params(m));
    EXPECT_DOUBLE_EQ(g.active_params(), active_params(m));
    EXPECT_DOUBLE_EQ(g.total_flops_fwd() + g.total_flops_bwd(), model_flops_per_iteration(m, mb));
    for (std::int64_t l = 1; l <= m.layers; ++l) {
      const LayerGroup& lg = g.groups()[static_cast<std::size_t>(l)];
      EXPECT_DOUBLE_EQ(lg.flops_fwd, layer_flops_fwd(m, mb, l)) << l;
      EXPECT_DOUBLE_EQ(lg.activation_bytes, layer_activation_bytes(m, mb, l)) << l;
    }
  }
}

TEST(MoeModel, ActiveFlopsByHand) {
  const ModelSpec m = tiny_moe();
  const double t = 16;  // one sequence
  // MoE block forward: attention GEMMs 2t*4h^2, core 4*t*s*h, router 2t*h*E,
  // two routed experts and one shared expert of 2t*3*h*f each.
  const double by_hand = 2 * t * 16384 + 4 * t * 16 * 64 + 2 * t * 64 * 4 + 2 * (2 * t * 3 * 64 * 32) +
                         2 * t * 3 * 64 * 48;
  EXPECT_DOUBLE_EQ(layer_flops_fwd(m, 1, 2), by_hand);
  // Every expert instead of two: the "total" FLOPs are larger by 2 experts per MoE layer.
  EXPECT_DOUBLE_EQ(all_experts_flops_per_iteration(m, 1) - model_flops_per_iteration(m, 1),
                   3 * 2 * (2 * (2 * t * 3 * 64 * 32)));
}

TEST(MoeModel, ExpertGemmShapesAreGroupedPerExpert) {
  const ModelSpec m = tiny_moe();
  const ModelGraph g = ModelGraph::build(m, 3);  // 48 tokens, 96 routed copies, 24 per expert
  int seen = 0;
  for (std::size_t v = 0; v < g.num_ops(); ++v) {
    const Op& op = g.op(v);
    if (op.name == "layer2.expert_up") {
      ++seen;
      EXPECT_EQ(op.gemm.m, 24);
      EXPECT_EQ(op.gemm.n, 32);
      EXPECT_EQ(op.gemm.k, 64);
      EXPECT_EQ(op.gemm_count, 4);
      EXPECT_TRUE(op.routed_expert);
      EXPECT_EQ(op.ep_comm, EpComm::DispatchForwardCombineBackward);
      EXPECT_DOUBLE_EQ(op.ep_comm_bytes, 2.0 * 48 * 2 * 64);
      EXPECT_DOUBLE_EQ(op.active_params, 2 * 64 * 32);
    }
    if (op.name == "layer2.expert_down") {
      ++seen;
      EXPECT_EQ(op.gemm.m, 24);
      EXPECT_EQ(op.gemm.n, 64);
      EXPECT_EQ(op.gemm.k, 32);
      EXPECT_EQ(op.ep_comm, EpComm::CombineForwardDispatchBackward);
    }
    if (op.name == "layer2.router") {
      ++seen;
      EXPECT_EQ(op.sharding, Sharding::Replicated);
      EXPECT_EQ(op.gemm.n, 4);
    }
    if (op.name == "layer1.expert_up") ADD_FAILURE() << "layer 1 is dense";
  }
  EXPECT_EQ(seen, 3);
}

TEST(MoeModel, DeepSeekV3LatentAttentionByHand) {
  // DeepSeek-V3 attention: h 7168, 128 heads, q_lora 1536, kv_lora 512, nope 128, rope 64, v 128.
  ModelSpec m;
  m.name = "mla";
  m.layers = 2, m.hidden = 7168, m.heads = 128, m.kv_heads = 128, m.ffn = 18432, m.vocab = 1000,
  m.seq_len = 64, m.activation = Activation::SwiGlu, m.norm = Norm::RmsNorm, m.positions = Positions::Rope;
  m.mla = MlaSpec{1536, 512, 128, 64, 128};
  validate(m, "test");
  const double q = 7168.0 * 1536 + 1536.0 * 128 * 192;
  const double kv = 7168.0 * (512 + 64) + 512.0 * 128 * (128 + 128);
  const double o = 128.0 * 128 * 7168;
  EXPECT_EQ(attention_params(m), q + kv + o + 1536 + 512);
  EXPECT_EQ(attention_params(m), 187107328.0);
  // The graph agrees (a different path), and without query compression q is one GEMM.
  EXPECT_DOUBLE_EQ(ModelGraph::build(m, 1).total_params(), total_params(m));
  m.mla->q_lora_rank = 0;
  EXPECT_EQ(attention_params(m), 7168.0 * 128 * 192 + kv + o + 512);
  EXPECT_DOUBLE_EQ(ModelGraph::build(m, 2).total_params(), total_params(m));
  const ModelGraph g = ModelGraph::build(m, 2);
  EXPECT_DOUBLE_EQ(g.total_flops_fwd() + g.total_flops_bwd(), model_flops_per_iteration(m, 2));
  EXPECT_DOUBLE_EQ(g.groups()[1].activation_bytes, layer_activation_bytes(m, 2, 1));
}

TEST(MoeModel, ExplicitHeadDimWidensQ) {
  // Qwen3-30B-A3B attention: h 2048, 32 heads of 128 (q width 4096), 4 KV heads.
  ModelSpec m;
  m.name = "hd";
  m.layers = 1, m.hidden = 2048, m.heads = 32, m.kv_heads = 4, m.ffn = 6144, m.vocab = 100,
  m.seq_len = 32, m.activation = Activation::SwiGlu, m.norm = Norm::RmsNorm, m.positions = Positions::Rope;
  m.explicit_head_dim = 128;
  EXPECT_EQ(m.q_dim(), 4096);
  EXPECT_EQ(attention_params(m), 2048.0 * (4096 + 2 * 512) + 4096.0 * 2048);
  const ModelGraph g = ModelGraph::build(m, 1);
  EXPECT_DOUBLE_EQ(g.total_params(), total_params(m));
  EXPECT_DOUBLE_EQ(g.total_flops_fwd(), training_flops(m, 1, false) / 3);
  EXPECT_DOUBLE_EQ(g.groups()[1].activation_bytes, block_activation_bytes(m, 1));
}

TEST(MoeModel, DenseModelsAreUnchanged) {
  ModelSpec m = parse_model_yaml("layers: 2\nhidden: 64\nheads: 4\nvocab: 100\nseq_len: 16\n", "d.yaml");
  EXPECT_EQ(active_params(m), total_params(m));
  EXPECT_EQ(all_experts_flops_per_iteration(m, 2), model_flops_per_iteration(m, 2));
  EXPECT_EQ(m.attention(), AttentionKind::Mha);
}

TEST(MoeModel, YamlRoundTrip) {
  ModelSpec m = tiny_moe();
  m.moe->capacity_factor = 1.25;
  m.moe->router = RouterKind::Sigmoid;
  EXPECT_EQ(parse_model_yaml(to_yaml(m), "x.yaml"), m);
  ModelSpec a;
  a.name = "mla", a.layers = 2, a.hidden = 96, a.heads = 4, a.kv_heads = 4, a.ffn = 128, a.vocab = 50,
  a.seq_len = 8, a.activation = Activation::SwiGlu, a.norm = Norm::RmsNorm, a.positions = Positions::Rope;
  a.mla = MlaSpec{0, 32, 16, 8, 16};
  a.moe = MoeSpec{8, 2, 32, 2, 32, 1, RouterKind::Sigmoid, 0};
  EXPECT_EQ(parse_model_yaml(to_yaml(a), "x.yaml"), a);
  ModelSpec h = parse_model_yaml("layers: 1\nhidden: 64\nheads: 4\nhead_dim: 32\nvocab: 10\nseq_len: 8\n", "h");
  EXPECT_EQ(h.q_dim(), 128);
  EXPECT_EQ(parse_model_yaml(to_yaml(h), "x.yaml"), h);
}

TEST(MoeModel, BadMoeFieldsAreNamed) {
  auto bad = [](const std::string& moe) {
    return message_of([&] {
      parse_model_yaml("layers: 3\nhidden: 64\nheads: 4\nvocab: 10\nseq_len: 8\nmoe: " + moe + "\n", "m.yaml");
    });
  };
  EXPECT_CONTAINS(bad("{experts: 4, top_k: 5, expert_ffn: 8}"), "moe.top_k (5) must be in 1 .. moe.experts (4)");
  EXPECT_CONTAINS(bad("{experts: 0, top_k: 1, expert_ffn: 8}"), "moe.experts (0) must be > 0");
  EXPECT_CONTAINS(bad("{experts: 4, top_k: 1, expert_ffn: 8, first_dense_layers: 3}"),
                  "moe.first_dense_layers (3)");
  EXPECT_CONTAINS(bad("{experts: 4, top_k: 1, expert_ffn: 8, capacity_factor: 0}"), "capacity_factor");
  EXPECT_CONTAINS(bad("{experts: 4, top_k: 1, expert_ffn: 8, router: topk}"), "router");
  EXPECT_CONTAINS(bad("{experts: 4, top_k: 1, expert_fnn: 8}"), "expert_fnn");
  EXPECT_CONTAINS(message_of([] {
                    parse_model_yaml("layers: 1\nhidden: 64\nheads: 4\nkv_heads: 2\nattention: mha\nvocab: 10\nseq_len: 8\n", "a");
                  }),
                  "attention");
  EXPECT_CONTAINS(message_of([] {
                    parse_model_yaml("layers: 1\nhidden: 64\nheads: 4\nattention: mla\nvocab: 10\nseq_len: 8\n", "a");
                  }),
                  "no mla: section");
}

TEST(MoeModel, CatalogMoeModelsMatchPublishedCounts) {
  struct Row {
    const char* name;
    double total, active, active_tolerance;
  };
  // Published: Mixtral paper / release notes, DeepSeek-V3 report (37B is rounded down from
  // 37.55B, see hf_moe_config_test), Qwen1.5-MoE and Qwen3-30B-A3B model cards (3.3B: one
  // decimal, 3.35B to 3.25B).
  for (const Row& r : {Row{"mixtral-8x7b", 46.7e9, 12.9e9, 0.005}, Row{"mixtral-8x22b", 141e9, 39e9, 0.005},
                       Row{"deepseek-v3", 671e9, 37e9, 0.016}, Row{"qwen1.5-moe-a2.7b", 14.3e9, 2.7e9, 0.005},
                       Row{"qwen3-moe-30b-a3b", 30.5e9, 3.3e9, 0.02}}) {
    const ModelSpec m = load_model(r.name);
    ASSERT_TRUE(m.moe) << r.name;
    // Published counts are of the main model (DeepSeek-V3's MTP depth apart: mtp_model_test).
    EXPECT_LT(std::fabs(main_model_params(m) / r.total - 1), 0.005) << r.name << " " << main_model_params(m);
    EXPECT_LT(std::fabs(main_model_active_params(m) / r.active - 1), r.active_tolerance)
        << r.name << " " << main_model_active_params(m);
  }
}
