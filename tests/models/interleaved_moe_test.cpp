// Dense and MoE blocks interleaved (moe.layer_step, Llama-4): which blocks are MoE, the
// published parameter counts of Llama 4 Maverick and Scout, the costs against an all-MoE
// model of the same shape, the YAML field and its refusals, and the Llama4 config.json
// import (nested text_config of the multimodal checkpoints, or a bare llama4_text config).
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
using strata::models::testing::rel;

// meta-llama/Llama-4-Maverick-17B-128E config.json as published (text_config keys as shipped,
// the vision tower's keys shortened to a few: strata does not read them).
std::string maverick_config(const std::string& extra_text_keys = "") {
  return R"({"architectures": ["Llama4ForConditionalGeneration"], "boi_token_index": 200080,
  "eoi_token_index": 200081, "image_token_index": 200092, "model_type": "llama4",
  "text_config": {"attention_bias": false, "attention_chunk_size": 8192, "attention_dropout": 0.0,
    "bos_token_id": 200000, "eos_token_id": [200001, 200007, 200008], "for_llm_compressor": false,
    "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02,
    "interleave_moe_layer_step": 2, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
    "max_position_embeddings": 1048576, "model_type": "llama4_text", "num_attention_heads": 40,
    "num_experts_per_tok": 1, "num_hidden_layers": 48, "num_key_value_heads": 8,
    "num_local_experts": 128, "output_router_logits": false, "pad_token_id": 200018,
    "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 500000.0,
    "router_aux_loss_coef": 0.001, "router_jitter_noise": 0.0, "torch_dtype": "bfloat16",
    "use_cache": true, "use_qk_norm": false, )" +
         extra_text_keys + R"("vocab_size": 202048},
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.51.0.dev0",
  "vision_config": {"hidden_act": "gelu", "hidden_size": 1408, "image_size": 336,
    "intermediate_size": 5632, "model_type": "llama4_vision_model", "num_attention_heads": 16,
    "num_hidden_layers": 34, "patch_size": 14, "vision_output_dim": 4096}})";
}

// meta-llama/Llama-4-Scout-17B-16E text_config as a bare Llama4TextConfig (model_type
// llama4_text, as Llama4ForCausalLM checkpoints carry it).
const char* kScoutText = R"({"attention_bias": false, "attention_chunk_size": 8192,
  "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120, "interleave_moe_layer_step": 1,
  "intermediate_size": 8192, "intermediate_size_mlp": 16384, "max_position_embeddings": 10485760,
  "model_type": "llama4_text", "num_attention_heads": 40, "num_experts_per_tok": 1,
  "num_hidden_layers": 48, "num_key_value_heads": 8, "num_local_experts": 16,
  "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 16.0, "high_freq_factor": 1.0,
  "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "use_qk_norm": true, "vocab_size": 202048})";

ModelSpec small(std::int64_t layers, std::int64_t first_dense, std::int64_t step) {
  ModelSpec m = parse_model_yaml(
      "name: s\nlayers: 8\nhidden: 64\nheads: 4\nkv_heads: 2\nffn: 256\nvocab: 100\nseq_len: 16\n"
      "activation: swiglu\nnorm: rmsnorm\ntied_embeddings: false\n"
      "moe: {experts: 4, top_k: 1, expert_ffn: 128, shared_experts: 1, shared_expert_ffn: 128}\n",
      "s.yaml");
  m.layers = layers;
  m.moe->first_dense_layers = first_dense;
  m.moe->layer_step = step;
  validate(m, "s.yaml");
  return m;
}

}  // namespace

TEST(InterleavedMoe, BlocksFollowHuggingFacesRule) {
  // Llama4TextConfig: 0-based moe_layers = range(step - 1, layers, step), i.e. 1-based
  // blocks 2, 4, 6, 8 for step 2 over 8 blocks.
  const ModelSpec two = small(8, 0, 2);
  for (std::int64_t l = 1; l <= 8; ++l) EXPECT_EQ(two.is_moe_layer(l), l % 2 == 0) << l;
  EXPECT_EQ(two.moe_layer_count(), 4);
  EXPECT_EQ(two.first_moe_layer(), 2);
  EXPECT_TRUE(two.has_dense_layers());
  // A dense prefix with a step: blocks 1-3 dense, then 4, 6, 8 (Qwen-MoE mlp_only_layers
  // [0, 1, 2] with decoder_sparse_step 2).
  const ModelSpec both = small(8, 3, 2);
  for (std::int64_t l = 1; l <= 8; ++l) EXPECT_EQ(both.is_moe_layer(l), l == 4 || l == 6 || l == 8) << l;
  EXPECT_EQ(both.moe_layer_count(), 3);
  EXPECT_EQ(both.first_moe_layer(), 4);
  // Step 3 over 7 blocks: 3 and 6; the last block is dense.
  const ModelSpec three = small(7, 0, 3);
  EXPECT_EQ(three.moe_layer_count(), 2);
  EXPECT_FALSE(three.is_moe_layer(7));
  // Step 1, no prefix: every block, no dense one.
  const ModelSpec all = small(8, 0, 1);
  EXPECT_EQ(all.moe_layer_count(), 8);
  EXPECT_FALSE(all.has_dense_layers());
}

TEST(InterleavedMoe, Llama4CatalogMatchesMetasPublishedCounts) {
  // Model cards (meta-llama/Llama-4-Maverick-17B-128E, Llama-4-Scout-17B-16E): Maverick 17B
  // active / 400B total, Scout 17B active / 109B total. The cards count the whole checkpoint,
  // the vision encoder (34 blocks of width 1408, under 1B) included; strata models the text
  // decoder: Scout's total sits about 1% under the card's.
  const ModelSpec maverick = load_model("llama4-maverick");
  EXPECT_LT(rel(main_model_params(maverick), 400e9), 0.005) << main_model_params(maverick);
  EXPECT_LT(rel(main_model_active_params(maverick), 17e9), 0.02) << main_model_active_params(maverick);
  const ModelSpec scout = load_model("llama4-scout");
  EXPECT_LT(rel(main_model_params(scout), 109e9), 0.015) << main_model_params(scout);
  EXPECT_LT(main_model_params(scout), 109e9);
  EXPECT_LT(rel(main_model_active_params(scout), 17e9), 0.02) << main_model_active_params(scout);
  // The all-MoE approximation the validation rows used before (every block MoE) is 385B off.
  ModelSpec all_moe = maverick;
  all_moe.moe->layer_step = 1;
  EXPECT_GT(main_model_params(all_moe), 780e9);
  // The op graph agrees with the closed forms.
  const ModelGraph g = ModelGraph::build(maverick, 1);
  EXPECT_LT(rel(g.total_params(), total_params(maverick)), 1e-12);
  EXPECT_LT(rel(g.active_params(), active_params(maverick)), 1e-12);
}

TEST(InterleavedMoe, StepTwoCostsLessThanAllMoe) {
  const ModelSpec step2 = load_model("llama4-maverick");
  ModelSpec all = step2;
  all.moe->layer_step = 1;
  // Per token a dense block's MLP (3 x 5120 x 16384) equals an MoE block's active MLP
  // (router, 1 routed + 1 shared expert of 8192) but for the router: FLOPs differ only by the
  // routers of the 24 blocks that are dense at step 2; parameters by 24 x 127 experts.
  const double t = 8192;
  EXPECT_NEAR(model_flops_per_iteration(all, 1) - model_flops_per_iteration(step2, 1),
              3 * 24 * 2 * t * 5120.0 * 128, 1e-6 * model_flops_per_iteration(all, 1));
  EXPECT_LT(model_flops_per_iteration(step2, 1), model_flops_per_iteration(all, 1));
  EXPECT_NEAR(total_params(all) - total_params(step2), 24 * (5120.0 * 128 + 127 * 3 * 5120.0 * 8192),
              1.0);
  EXPECT_LT(all_experts_flops_per_iteration(step2, 1), 0.55 * all_experts_flops_per_iteration(all, 1));
  // Activations: the MoE block keeps its routed tokens too.
  EXPECT_LT(layer_activation_bytes(step2, 1, 1), layer_activation_bytes(step2, 1, 2));
}

TEST(InterleavedMoe, YamlFieldRoundTripsAndIsChecked) {
  const ModelSpec m = small(8, 3, 2);
  EXPECT_EQ(parse_model_yaml(to_yaml(m), "x.yaml"), m);
  EXPECT_NE(to_yaml(m).find("layer_step: 2"), std::string::npos);
  EXPECT_EQ(to_yaml(small(8, 0, 1)).find("layer_step"), std::string::npos);  // the default is left out
  const auto bad = [](const std::string& moe) {
    return message_of([&] {
      parse_model_yaml("layers: 4\nhidden: 64\nheads: 4\nvocab: 10\nseq_len: 8\nactivation: swiglu\n"
                       "moe: {experts: 4, top_k: 1, expert_ffn: 32, " + moe + "}\n",
                       "m.yaml");
    });
  };
  EXPECT_CONTAINS(bad("layer_step: 0"), "model.moe.layer_step (0) must be in 1 .. model.layers (4)");
  EXPECT_CONTAINS(bad("layer_step: 5"), "model.moe.layer_step (5) must be in 1 .. model.layers (4)");
  EXPECT_CONTAINS(bad("layer_step: 3, first_dense_layers: 3"),
                  "model.moe.layer_step (3) leaves no MoE block after moe.first_dense_layers (3)");
  EXPECT_EQ(bad("layer_step: 4"), "<no InputError>");  // block 4 alone
}

TEST(HfConfigLlama4, MaverickNestedTextConfigMapsToTheCatalogModel) {
  const ModelSpec m = parse_hf_config(maverick_config(), "Llama-4-Maverick/config.json");
  EXPECT_EQ(m.name, "Llama-4-Maverick");
  ASSERT_TRUE(m.moe);
  EXPECT_EQ(m.moe->layer_step, 2);
  EXPECT_EQ(m.moe->first_dense_layers, 0);
  EXPECT_EQ(m.ffn, 16384);                 // intermediate_size_mlp: the dense blocks
  EXPECT_EQ(m.moe->expert_ffn, 8192);      // intermediate_size: each expert
  EXPECT_EQ(m.moe->shared_experts, 1);     // Llama4TextMoe's shared_expert
  EXPECT_EQ(m.moe->shared_expert_ffn, 8192);
  EXPECT_EQ(m.moe->experts, 128);
  EXPECT_EQ(m.moe->top_k, 1);
  EXPECT_EQ(m.moe->router, RouterKind::Sigmoid);
  EXPECT_EQ(m.seq_len, 8192);              // attention_chunk_size: chunked = full attention up to it
  EXPECT_FALSE(m.tied_embeddings);
  EXPECT_EQ(m.rope_base, 500000);
  EXPECT_EQ(m.head_dim(), 128);
  // The same model as the catalog's, but for the name.
  ModelSpec catalog = load_model("llama4-maverick");
  catalog.name = m.name;
  EXPECT_EQ(m, catalog);
  // An explicit moe_layers list (newer transformers write it out) that agrees with the step.
  std::string list = "[1";
  for (int i = 3; i < 48; i += 2) list += ", " + std::to_string(i);
  list += "]";
  EXPECT_EQ(parse_hf_config(maverick_config("\"moe_layers\": " + list + ", "), "c.json").moe->layer_step, 2);
  // moe_layers overrides the step (Llama4TextConfig): every layer listed = every block MoE.
  std::string every = "[0";
  for (int i = 1; i < 48; ++i) every += ", " + std::to_string(i);
  every += "]";
  EXPECT_EQ(parse_hf_config(maverick_config("\"moe_layers\": " + every + ", "), "c.json").moe->layer_step, 1);
}

TEST(HfConfigLlama4, ScoutTextConfigAndRefusals) {
  const ModelSpec scout = parse_hf_config(kScoutText, "scout.json");
  ASSERT_TRUE(scout.moe);
  EXPECT_EQ(scout.moe->layer_step, 1);
  EXPECT_EQ(scout.moe->experts, 16);
  EXPECT_EQ(scout.moe_layer_count(), 48);
  ModelSpec catalog = load_model("llama4-scout");
  catalog.name = scout.name;
  EXPECT_EQ(scout, catalog);
  // Layouts strata cannot express, and what the nested form needs, are refused by name.
  EXPECT_CONTAINS(message_of([] { parse_hf_config(maverick_config("\"moe_layers\": [1, 3, 7], "), "c.json"); }),
                  "moe_layers [1,3,7] is not every k-th layer");
  EXPECT_CONTAINS(message_of([] { parse_hf_config(maverick_config("\"moe_layers\": [0, 2], "), "c.json"); }),
                  "moe_layers [0,2] is not every k-th layer");
  EXPECT_CONTAINS(message_of([] { parse_hf_config(R"({"model_type": "llama4", "vision_config": {}})", "c.json"); }),
                  "model_type 'llama4' needs a text_config object");
  const std::string no_mlp = std::string(kScoutText).replace(std::string(kScoutText).find("\"intermediate_size_mlp\": 16384, "),
                                                             std::string("\"intermediate_size_mlp\": 16384, ").size(), "");
  EXPECT_EQ(parse_hf_config(no_mlp, "c.json").moe->layer_step, 1);  // all MoE: not needed
  const std::string no_mlp_step2 =
      std::string(no_mlp).replace(no_mlp.find("\"interleave_moe_layer_step\": 1"), 30, "\"interleave_moe_layer_step\": 2");
  EXPECT_CONTAINS(message_of([&] { parse_hf_config(no_mlp_step2, "c.json"); }), "'intermediate_size_mlp' is missing");
  EXPECT_CONTAINS(message_of([] { parse_hf_config(maverick_config("\"attention_bias\": true, "), "c.json"); }),
                  "attention_bias");
  // Other multimodal wrappers are still refused.
  EXPECT_CONTAINS(message_of([] { parse_hf_config(R"({"model_type": "llava", "text_config": {}})", "c.json"); }),
                  "text_config");
}

TEST(HfConfigLlama4, QwenDecoderSparseStepIsTheSameRule) {
  // Qwen2-MoE: layer index i (0-based) is sparse when (i + 1) % decoder_sparse_step == 0 and
  // i is not in mlp_only_layers.
  const ModelSpec m = parse_hf_config(
      R"({"model_type": "qwen2_moe", "hidden_size": 64, "num_hidden_layers": 8, "num_attention_heads": 4,
          "intermediate_size": 256, "vocab_size": 100, "max_position_embeddings": 16, "rms_norm_eps": 1e-6,
          "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
          "decoder_sparse_step": 2, "mlp_only_layers": [0, 1, 2]})",
      "q.json");
  EXPECT_EQ(m.moe->layer_step, 2);
  EXPECT_EQ(m.moe->first_dense_layers, 3);
  EXPECT_EQ(m.moe_layer_count(), 3);  // 0-based 3, 5, 7
}
