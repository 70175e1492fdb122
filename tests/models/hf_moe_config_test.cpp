// HuggingFace config.json of mixture-of-experts models: the published configs (fixtures
// below, as shipped on the Hub) map to the published parameter counts, and keys strata
// cannot model are refused by name. Never silently dense.
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

using strata::models::testing::rel;

// mistralai/Mixtral-8x7B-v0.1 config.json.
const char* kMixtral = R"({"architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0,
  "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096,
  "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 32768,
  "model_type": "mixtral", "num_attention_heads": 32, "num_experts_per_tok": 2,
  "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
  "output_router_logits": false, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
  "router_aux_loss_coef": 0.02, "sliding_window": null, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "transformers_version": "4.36.0.dev0", "use_cache": true,
  "vocab_size": 32000})";

// Qwen/Qwen1.5-MoE-A2.7B config.json.
const char* kQwen15Moe = R"({"architectures": ["Qwen2MoeForCausalLM"], "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 2048,
  "initializer_range": 0.02, "intermediate_size": 5632, "max_position_embeddings": 8192,
  "max_window_layers": 21, "model_type": "qwen2_moe", "num_attention_heads": 16,
  "num_hidden_layers": 24, "num_key_value_heads": 16, "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "transformers_version": "4.39.0.dev0", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 151936, "decoder_sparse_step": 1,
  "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
  "num_experts_per_tok": 4, "num_experts": 60, "norm_topk_prob": false,
  "output_router_logits": false, "router_aux_loss_coef": 0.001})";

// Qwen/Qwen3-30B-A3B config.json.
const char* kQwen3Moe = R"({"architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false,
  "attention_dropout": 0.0, "bos_token_id": 151643, "decoder_sparse_step": 1,
  "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 2048,
  "initializer_range": 0.02, "intermediate_size": 6144, "max_position_embeddings": 40960,
  "max_window_layers": 48, "mlp_only_layers": [], "model_type": "qwen3_moe",
  "moe_intermediate_size": 768, "norm_topk_prob": true, "num_attention_heads": 32,
  "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48,
  "num_key_value_heads": 4, "output_router_logits": false, "rms_norm_eps": 1e-06,
  "rope_scaling": null, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
  "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false,
  "vocab_size": 151936})";

// deepseek-ai/DeepSeek-V3 config.json (auto_map left out), with `mtp` as the value of
// num_nextn_predict_layers (the Hub file has 1).
std::string deepseek_v3(const std::string& mtp = "1") {
  return R"({"architectures": ["DeepseekV3ForCausalLM"], "attention_bias": false,
  "attention_dropout": 0.0, "aux_loss_alpha": 0.001, "bos_token_id": 0, "eos_token_id": 1,
  "ep_size": 1, "first_k_dense_replace": 3, "hidden_act": "silu", "hidden_size": 7168,
  "initializer_range": 0.02, "intermediate_size": 18432, "kv_lora_rank": 512,
  "max_position_embeddings": 163840, "model_type": "deepseek_v3", "moe_intermediate_size": 2048,
  "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256, "n_shared_experts": 1,
  "norm_topk_prob": true, "num_attention_heads": 128, "num_experts_per_tok": 8,
  "num_hidden_layers": 61, "num_key_value_heads": 128, "num_nextn_predict_layers": )" + mtp + R"(,
  "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
  "weight_block_size": [128, 128]}, "rms_norm_eps": 1e-06,
  "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
  "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096, "type": "yarn"},
  "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "seq_aux": true,
  "tie_word_embeddings": false, "topk_group": 4, "topk_method": "noaux_tc",
  "torch_dtype": "bfloat16", "transformers_version": "4.33.1", "use_cache": true,
  "v_head_dim": 128, "vocab_size": 129280})";
}

// deepseek-ai/DeepSeek-V2-Lite config.json (no query compression: q_lora_rank null).
const char* kDeepSeekV2Lite = R"({"architectures": ["DeepseekV2ForCausalLM"], "attention_bias": false,
  "attention_dropout": 0.0, "aux_loss_alpha": 0.001, "bos_token_id": 100000,
  "eos_token_id": 100001, "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 2048,
  "initializer_range": 0.02, "intermediate_size": 10944, "kv_lora_rank": 512,
  "max_position_embeddings": 163840, "model_type": "deepseek_v2", "moe_intermediate_size": 1408,
  "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 64, "n_shared_experts": 2,
  "norm_topk_prob": false, "num_attention_heads": 16, "num_experts_per_tok": 6,
  "num_hidden_layers": 27, "num_key_value_heads": 16, "q_lora_rank": null,
  "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
  "rope_theta": 10000, "routed_scaling_factor": 1.0, "scoring_func": "softmax",
  "seq_aux": true, "tie_word_embeddings": false, "topk_group": 1, "topk_method": "greedy",
  "torch_dtype": "bfloat16", "use_cache": true, "v_head_dim": 128, "vocab_size": 102400})";

// A JSON object text without `"key": value, ` (value a scalar).
std::string without_key(std::string text, const std::string& key) {
  const auto p = text.find("\"" + key + "\": ");
  auto end = text.find(',', p);
  end = text.find_first_not_of(" \n", end + 1);
  return text.erase(p, end - p);
}

// A key replaced (or added) in a JSON object text: `"key": value`.
std::string with_key(std::string text, const std::string& key, const std::string& value) {
  const std::string k = "\"" + key + "\": ";
  auto p = text.find(k);
  if (p == std::string::npos) return text.substr(0, text.size() - 1) + ", " + k + value + "}";
  auto end = text.find_first_of(",}", p + k.size());
  if (text[p + k.size()] == '[' || text[p + k.size()] == '{')
    end = text.find_first_of("]}", p + k.size()) + 1;
  return text.substr(0, p + k.size()) + value + text.substr(end);
}

}  // namespace

TEST(HfMoeConfig, Mixtral8x7bMatchesPublishedCounts) {
  const ModelSpec m = parse_hf_config(kMixtral, "mixtral/config.json");
  ASSERT_TRUE(m.moe);
  EXPECT_EQ(m.moe->experts, 8);
  EXPECT_EQ(m.moe->top_k, 2);
  EXPECT_EQ(m.moe->expert_ffn, 14336);
  EXPECT_EQ(m.moe->shared_experts, 0);
  EXPECT_EQ(m.attention(), AttentionKind::Gqa);
  // Mistral AI: 46.7B total, 12.9B active per token.
  EXPECT_LT(rel(total_params(m), 46.7e9), 0.005) << total_params(m);
  EXPECT_LT(rel(active_params(m), 12.9e9), 0.005) << active_params(m);
  // By hand: 32 x (attention 4096*(4096+2048) + 4096^2, router 8*4096, 8 experts of
  // 3*4096*14336, norms 2*4096) + 2 x 32000*4096 + 4096.
  const double layer = 4096.0 * 6144 + 4096.0 * 4096 + 8 * 4096 + 8 * 3 * 4096.0 * 14336 + 2 * 4096;
  EXPECT_EQ(total_params(m), 32 * layer + 2 * 32000.0 * 4096 + 4096);
  // rope_theta 1e6 is kept (exports write it as --rotary-base); the YAML round trip keeps it.
  EXPECT_EQ(m.rope_base, 1e6);
  EXPECT_EQ(parse_model_yaml(to_yaml(m), "m.yaml").rope_base, 1e6);
}

TEST(HfMoeConfig, DeepSeekV3MatchesPublishedCounts) {
  const ModelSpec m = parse_hf_config(deepseek_v3(), "deepseek-v3/config.json");
  EXPECT_EQ(m.rope_base, 10000);
  ASSERT_TRUE(m.moe);
  ASSERT_TRUE(m.mla);
  EXPECT_EQ(m.moe->first_dense_layers, 3);
  EXPECT_EQ(m.moe->shared_experts, 1);
  EXPECT_EQ(m.moe->router, RouterKind::Sigmoid);
  EXPECT_EQ(m.mla->q_lora_rank, 1536);
  EXPECT_EQ(m.mtp_layers, 1);  // the published file plans as trained, with its MTP depth
  // topk_method noaux_tc: 4 of n_group 8 expert groups per token (node-limited routing).
  EXPECT_EQ(m.moe->groups, 8);
  EXPECT_EQ(m.moe->max_groups_per_token, 4);
  EXPECT_EQ(parse_model_yaml(to_yaml(m), "m.yaml"), m);
  EXPECT_CONTAINS(message_of([] { parse_hf_config(with_key(deepseek_v3(), "topk_group", "9"), "c.json"); }),
                  "topk_group");
  EXPECT_CONTAINS(message_of([] { parse_hf_config(with_key(deepseek_v3(), "topk_method", "\"other\""), "c.json"); }),
                  "topk_method 'other'");
  EXPECT_EQ(parse_hf_config(deepseek_v3("0"), "c.json").mtp_layers, 0);
  // DeepSeek-AI 2024 (DeepSeek-V3 technical report): 671B total parameters, 37B activated,
  // both of the main model (the MTP depth apart: mtp_model_test).
  EXPECT_LT(rel(main_model_params(m), 671e9), 0.005) << main_model_params(m);
  // Active by hand: 61 MLA blocks (187,107,328 attention + 14,336 norms), 3 dense MLPs of
  // 3*7168*18432, 58 MoE layers of router 256*7168 + 9 experts (8 routed + 1 shared) of
  // 3*7168*2048, embeddings and LM head 2*129280*7168, final norm 7168: 37.55B. The
  // report's "37B" is that number rounded down (1.5% below it); the model is not tuned to it.
  const double active = 61 * (187107328.0 + 2 * 7168) + 3 * 3 * 7168.0 * 18432 +
                        58 * (256 * 7168.0 + 9 * 3 * 7168.0 * 2048) + 2 * 129280.0 * 7168 + 7168;
  EXPECT_EQ(main_model_active_params(m), active);
  EXPECT_LT(rel(main_model_active_params(m), 37e9), 0.016) << main_model_active_params(m);
  // The graph (a different path) agrees.
  ModelSpec small = with_seq_len(m, 16);
  const ModelGraph g = ModelGraph::build(small, 1);
  EXPECT_LT(rel(g.total_params(), total_params(m)), 1e-12);
  EXPECT_LT(rel(g.active_params(), active_params(m)), 1e-12);
}

TEST(HfMoeConfig, Qwen15MoeMatchesPublishedCounts) {
  const ModelSpec m = parse_hf_config(kQwen15Moe, "qwen1.5-moe/config.json");
  ASSERT_TRUE(m.moe);
  EXPECT_EQ(m.moe->experts, 60);
  EXPECT_EQ(m.moe->top_k, 4);
  EXPECT_EQ(m.moe->shared_experts, 1);
  EXPECT_EQ(m.moe->shared_expert_ffn, 5632);
  // Qwen team, Qwen1.5-MoE-A2.7B model card: 14.3B total, 2.7B activated.
  EXPECT_LT(rel(total_params(m), 14.3e9), 0.005) << total_params(m);
  EXPECT_LT(rel(active_params(m), 2.7e9), 0.005) << active_params(m);
}

TEST(HfMoeConfig, Qwen3MoeHasExplicitHeadDim) {
  const ModelSpec m = parse_hf_config(kQwen3Moe, "qwen3-30b-a3b/config.json");
  ASSERT_TRUE(m.moe);
  EXPECT_EQ(m.head_dim(), 128);
  EXPECT_EQ(m.q_dim(), 4096);  // 32 heads of 128 on a 2048 hidden
  EXPECT_EQ(m.moe->shared_experts, 0);
  // Qwen3 technical report: 30.5B total; 3.3B activated (ours 3.35B: rounded down there).
  EXPECT_LT(rel(total_params(m), 30.5e9), 0.005) << total_params(m);
  EXPECT_LT(rel(active_params(m), 3.3e9), 0.02) << active_params(m);
  // Qwen3Attention's q_norm / k_norm (RMSNorm of head_dim 128 on each head of Q and K): with
  // them the count is the checkpoint's on the HuggingFace hub, 30,532,122,624, and 48 x 2 x 128
  // above the same model without them.
  EXPECT_TRUE(m.qk_norm);
  EXPECT_EQ(total_params(m), 30532122624.0);
  ModelSpec no_qk = m;
  no_qk.qk_norm = false;
  EXPECT_EQ(total_params(m) - total_params(no_qk), 48.0 * 2 * 128);
  // The catalog entry is this file as published, at the pre-training sequence length.
  ModelSpec catalog = load_model("qwen3-moe-30b-a3b");
  catalog.name = m.name;
  EXPECT_EQ(with_seq_len(m, 4096), catalog);
}

// Qwen3 dense (Qwen/Qwen3-8B config.json): a Llama-family block with an explicit head_dim and
// the per-head Q and K norms; 8.19B parameters (Qwen3 technical report: 8.2B).
TEST(HfMoeConfig, Qwen3DenseIsLlamaWithQkNorms) {
  const char* qwen3_8b = R"({"architectures": ["Qwen3ForCausalLM"], "attention_bias": false,
    "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 12288,
    "max_position_embeddings": 40960, "model_type": "qwen3", "num_attention_heads": 32,
    "num_hidden_layers": 36, "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_theta": 1000000,
    "sliding_window": null, "tie_word_embeddings": false, "use_sliding_window": false,
    "vocab_size": 151936})";
  const ModelSpec m = parse_hf_config(qwen3_8b, "qwen3-8b/config.json");
  EXPECT_TRUE(m.qk_norm);
  EXPECT_FALSE(m.moe);
  EXPECT_EQ(m.head_dim(), 128);
  // By hand: attention 4096 x (4096 + 2 x 1024) + 4096 x 4096 + 2 x 128 (the Q/K norms);
  // SwiGLU 3 x 4096 x 12288; two RMSNorms of 4096; untied embedding and head 151936 x 4096.
  const double block = 4096.0 * (4096 + 2 * 1024) + 4096.0 * 4096 + 2 * 128 + 3 * 4096.0 * 12288 + 2 * 4096;
  EXPECT_EQ(total_params(m), 36 * block + 2 * 151936.0 * 4096 + 4096);
  EXPECT_LT(rel(total_params(m), 8.2e9), 0.005) << total_params(m);
  std::string biased = qwen3_8b;
  biased.replace(biased.find("\"attention_bias\": false"), 23, "\"attention_bias\": true ");
  EXPECT_THROW(parse_hf_config(biased, "b/config.json"), InputError);
}

TEST(HfMoeConfig, DeepSeekV2LiteWithoutQueryCompression) {
  const ModelSpec m = parse_hf_config(kDeepSeekV2Lite, "v2-lite/config.json");
  ASSERT_TRUE(m.mla);
  EXPECT_EQ(m.mla->q_lora_rank, 0);
  EXPECT_EQ(m.moe->router, RouterKind::Softmax);
  EXPECT_EQ(m.moe->shared_experts, 2);
  EXPECT_EQ(m.moe->groups, 0);  // topk_method greedy: no group limit
  // DeepSeek-V2 paper: V2-Lite has 15.7B total parameters. (Its "2.4B activated" leaves
  // out the input embedding table, 0.21B; ours counts it, like Mixtral's and Qwen's.)
  EXPECT_LT(rel(total_params(m), 15.7e9), 0.01) << total_params(m);
  const double q = 2048.0 * 16 * 192, kv = 2048.0 * 576 + 512.0 * 16 * 256 + 512, o = 16.0 * 128 * 2048;
  const double mlp = 3 * 2048.0 * 1408;
  EXPECT_EQ(active_params(m), 27 * (q + kv + o + 2 * 2048) + 3 * 2048.0 * 10944 +
                                  26 * (64 * 2048.0 + 8 * mlp) + 2 * 102400.0 * 2048 + 2048);
}

TEST(HfMoeConfig, UnmodelledKeysAreRefusedByName) {
  EXPECT_CONTAINS(message_of([] { parse_hf_config(deepseek_v3("-1"), "c.json"); }),
                  "num_nextn_predict_layers (-1) must be in 0 ..");
  EXPECT_CONTAINS(message_of([] { parse_hf_config(with_key(deepseek_v3(), "moe_layer_freq", "2"), "c.json"); }),
                  "moe_layer_freq (2)");
  EXPECT_CONTAINS(message_of([] { parse_hf_config(with_key(deepseek_v3(), "attention_bias", "true"), "c.json"); }),
                  "attention_bias");
  // decoder_sparse_step interleaves dense and MoE layers: moe.layer_step (interleaved_moe_test).
  EXPECT_EQ(parse_hf_config(with_key(kQwen3Moe, "decoder_sparse_step", "2"), "c.json").moe->layer_step, 2);
  EXPECT_CONTAINS(message_of([] { parse_hf_config(with_key(kQwen3Moe, "decoder_sparse_step", "0"), "c.json"); }),
                  "model.moe.layer_step (0) must be in 1 .. model.layers (48) (1 = every block MoE) "
                  "(config.json key 'decoder_sparse_step')");
  EXPECT_CONTAINS(message_of([] { parse_hf_config(with_key(kQwen3Moe, "mlp_only_layers", "[1, 3]"), "c.json"); }),
                  "mlp_only_layers");
  EXPECT_CONTAINS(message_of([] { parse_hf_config(with_key(kQwen3Moe, "num_experts_per_tok", "200"), "c.json"); }),
                  "num_experts_per_tok");
  // A leading run of dense layers is expressible.
  const ModelSpec m = parse_hf_config(with_key(kQwen3Moe, "mlp_only_layers", "[0, 1]"), "c.json");
  EXPECT_EQ(m.moe->first_dense_layers, 2);
}

TEST(HfMoeConfig, NeverSilentlyDense) {
  // A DeepSeek config read as a dense model type, or without model_type, is refused.
  for (const char* type : {"llama", "qwen2", "mistral"}) {
    EXPECT_CONTAINS(message_of([&] {
                      parse_hf_config(with_key(deepseek_v3(), "model_type", std::string("\"") + type + "\""), "c.json");
                    }),
                    "mixture-of-experts or latent attention");
  }
  const std::string no_type = without_key(deepseek_v3(), "model_type");
  ASSERT_EQ(no_type.find("model_type"), std::string::npos);
  EXPECT_CONTAINS(message_of([&] { parse_hf_config(no_type, "c.json"); }), "without model_type");
  EXPECT_CONTAINS(message_of([] { parse_hf_config(with_key(kMixtral, "model_type", "\"mistral\""), "c.json"); }),
                  "num_local_experts");
  // A missing MoE key is named.
  const std::string no_experts = without_key(kMixtral, "num_local_experts");
  EXPECT_CONTAINS(message_of([&] { parse_hf_config(no_experts, "c.json"); }), "num_local_experts");
}
