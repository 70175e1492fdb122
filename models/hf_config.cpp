// parse_hf_config: a HuggingFace config.json read into a ModelSpec, by model_type (the
// key families of transformers' LlamaConfig, MistralConfig, Qwen2Config, GPT2Config,
// MixtralConfig, Qwen2MoeConfig / Qwen3MoeConfig, DeepseekV2Config / DeepseekV3Config,
// Llama4TextConfig, alone or as the text_config of a Llama4Config).
#include "models/model_spec.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "common/json_text.h"
#include "models/detail/spec_check.h"

namespace strata::models {
namespace {

using detail::check_spec;
using detail::file_stem;

using nlohmann::json;

// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string json_message(const json::exception& e) {
  std::string what = e.what();
  if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
  return what;
}

class HfConfig {
 public:
  HfConfig(const json& j, std::string source) : j_(j), source_(std::move(source)) {}

  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  std::int64_t get_int(const char* key) const {
    if (!has(key))
      input_error("{}: config.json key '{}' is missing (expected an integer)", source_, key);
    return to_int(key, j_.at(key));
  }
  std::optional<std::int64_t> get_int_opt(const char* key) const {
    if (!has(key)) return std::nullopt;
    return to_int(key, j_.at(key));
  }
  std::string get_string(const char* key, const std::string& dflt) const {
    if (!has(key)) return dflt;
    const json& v = j_.at(key);
    if (!v.is_string())
      input_error("{}: config.json key '{}' must be a string, got {}", source_, key, v.dump());
    return v.get<std::string>();
  }
  double get_positive_double(const char* key, double dflt) const {
    if (!has(key)) return dflt;
    const json& v = j_.at(key);
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      input_error("{}: config.json key '{}' must be a positive number, got {}", source_, key, v.dump());
    return v.get<double>();
  }
  bool get_bool(const char* key, bool dflt) const {
    if (!has(key)) return dflt;
    const json& v = j_.at(key);
    if (!v.is_boolean())
      input_error("{}: config.json key '{}' must be true or false, got {}", source_, key, v.dump());
    return v.get<bool>();
  }
  const std::string& source() const { return source_; }
  // Present and switched on: true, a non-zero number, a non-empty string / object / list.
  bool truthy(const char* key) const {
    if (!has(key)) return false;
    const json& v = j_.at(key);
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_number()) return v.get<double>() != 0;
    if (v.is_string() || v.is_object() || v.is_array()) return !v.empty();
    return false;
  }

 private:
  std::int64_t to_int(const char* key, const json& v) const {
    if (v.is_number_unsigned()) {
      auto u = v.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        input_error("{}: config.json key '{}' ({}) is out of range", source_, key, u);
      return static_cast<std::int64_t>(u);
    }
    if (v.is_number_integer()) return v.get<std::int64_t>();
    if (v.is_number_float()) {
      double d = v.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18)
        return static_cast<std::int64_t>(d);
    }
    input_error("{}: config.json key '{}' must be an integer, got {}", source_, key, v.dump());
  }

  const json& j_;
  std::string source_;
};

Activation hf_activation(const HfConfig& c, const char* key, const std::string& dflt) {
  std::string act = c.get_string(key, dflt);
  if (act == "silu" || act == "swish") return Activation::SwiGlu;
  if (act == "gelu" || act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast")
    return Activation::Gelu;
  input_error("{}: config.json key '{}' ('{}') is not supported (expected silu, swish, gelu, "
              "gelu_new, gelu_pytorch_tanh or gelu_fast)",
              c.source(), key, act);
}

// model_type values strata reads, and the key family each uses. Other architectures are
// refused by name rather than read through keys that happen to look alike.
enum class HfFamily { Llama, Gpt2, Mixtral, QwenMoe, DeepSeek, Llama4 };
struct HfType {
  const char* model_type;
  HfFamily family;
};
constexpr HfType kHfTypes[] = {
    {"llama", HfFamily::Llama},         {"mistral", HfFamily::Llama},       {"qwen2", HfFamily::Llama},
    {"qwen3", HfFamily::Llama},
    {"gpt2", HfFamily::Gpt2},           {"mixtral", HfFamily::Mixtral},     {"qwen2_moe", HfFamily::QwenMoe},
    {"qwen3_moe", HfFamily::QwenMoe},   {"deepseek_v2", HfFamily::DeepSeek}, {"deepseek_v3", HfFamily::DeepSeek},
    {"llama4_text", HfFamily::Llama4}};

// Keys that make a config a mixture-of-experts or latent-attention model. A config of a
// dense model_type (or with no model_type) that carries one is refused by name: read as
// a dense Llama it would be planned as a different, much smaller model.
constexpr const char* kSparseKeys[] = {"num_local_experts", "num_experts", "n_routed_experts",
                                       "moe_intermediate_size", "num_experts_per_tok",
                                       "first_k_dense_replace", "kv_lora_rank", "q_lora_rank"};

// Architecture features the model spec cannot express, refused by name (each would
// otherwise be read as a plain decoder and planned with the wrong FLOPs and memory).
void refuse_unexpressible(const HfConfig& c) {
  const auto refuse = [&](const char* key, const char* what) {
    input_error("{}: config.json key '{}' describes {}, which strata's model spec cannot express "
                "(it models decoder-only transformers with sequential attention then MLP)",
                c.source(), key, what);
  };
  if (c.truthy("is_encoder_decoder")) refuse("is_encoder_decoder", "an encoder-decoder model");
  for (const char* k : {"encoder_layers", "num_encoder_layers", "decoder_layers"})
    if (c.has(k)) refuse(k, "an encoder-decoder model");
  for (const char* k : {"parallel_attn", "use_parallel_residual", "parallel_residual"})
    if (c.truthy(k)) refuse(k, "attention and MLP run in parallel from one input");
  if (c.truthy("multi_query")) refuse("multi_query", "multi-query attention in the falcon / bigcode layout");
  if (c.truthy("new_decoder_architecture")) refuse("new_decoder_architecture", "falcon's parallel decoder block");
  if (c.has("vision_config")) refuse("vision_config", "a vision tower (a multimodal model)");
  if (c.has("text_config")) refuse("text_config", "a multimodal wrapper around a text model");
  if (c.has("hidden_activation")) refuse("hidden_activation", "a gated GELU MLP (GeGLU)");
  if (c.has("feed_forward_proj")) refuse("feed_forward_proj", "a T5-style feed-forward block");
}

// A dense family must not carry mixture-of-experts / latent-attention keys.
void refuse_sparse_keys(const HfConfig& c, const std::string& type) {
  for (const char* k : kSparseKeys)
    if (c.has(k))
      input_error("{}: config.json key '{}' describes mixture-of-experts or latent attention, which "
                  "{} does not have; strata reads such models by their model_type (mixtral, "
                  "qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3, llama4)",
                  c.source(), k, type.empty() ? "a config without model_type" : "model_type '" + type + "'");
}

ModelSpec parse_llama_like(const HfConfig& c) {
  ModelSpec m;
  m.hidden = c.get_int("hidden_size");
  m.layers = c.get_int("num_hidden_layers");
  m.heads = c.get_int("num_attention_heads");
  m.kv_heads = c.get_int_opt("num_key_value_heads").value_or(m.heads);
  m.ffn = c.get_int("intermediate_size");
  m.vocab = c.get_int("vocab_size");
  m.seq_len = c.get_int("max_position_embeddings");
  m.activation = hf_activation(c, "hidden_act", "silu");
  // The Llama-family MLP is gated (gate, up, down projections): silu makes it SwiGLU;
  // a GELU there is GeGLU, which the spec does not have (its gelu MLP is ungated).
  if (m.activation != Activation::SwiGlu)
    input_error("{}: config.json hidden_act '{}' in a gated Llama-family MLP is a gated GELU (GeGLU), "
                "which strata's model spec cannot express (expected silu)",
                c.source(), c.get_string("hidden_act", "silu"));
  // Sliding-window attention shorter than the sequence changes the attention cost.
  if (c.has("sliding_window") && (!c.has("use_sliding_window") || c.get_bool("use_sliding_window", true))) {
    const std::int64_t w = c.get_int("sliding_window");
    if (w < m.seq_len)
      input_error("{}: config.json sliding_window ({}) is shorter than max_position_embeddings ({}): "
                  "sliding-window attention is not expressible in strata's model spec",
                  c.source(), w, m.seq_len);
  }
  if (c.has("rms_norm_eps")) m.norm = Norm::RmsNorm;
  else if (c.has("layer_norm_eps")) m.norm = Norm::LayerNorm;
  else m.norm = m.activation == Activation::SwiGlu ? Norm::RmsNorm : Norm::LayerNorm;
  m.positions = Positions::Rope;
  m.rope_base = c.get_positive_double("rope_theta", 10000.0);  // LlamaConfig default 10000
  m.tied_embeddings = c.get_bool("tie_word_embeddings", false);  // LlamaConfig default
  // An explicit head_dim (Qwen3, Gemma, Mistral-NeMo) sets the per-head width of Q, K, V.
  if (auto hd = c.get_int_opt("head_dim"))
    if (m.heads <= 0 || m.hidden % m.heads != 0 || *hd != m.hidden / m.heads) m.explicit_head_dim = *hd;
  return m;
}

// Refuses a boolean key that is switched on (an architecture feature not modelled).
void refuse_if_true(const HfConfig& c, const char* key, const char* what) {
  if (c.get_bool(key, false))
    input_error("{}: config.json key '{}' is true: {} is not modelled by strata", c.source(), key, what);
}

// MixtralConfig (transformers src/transformers/models/mixtral/configuration_mixtral.py):
// a Mistral block whose MLP is num_local_experts SwiGLU experts of intermediate_size,
// num_experts_per_tok per token, softmax router, no shared experts, every layer sparse.
ModelSpec parse_mixtral(const HfConfig& c) {
  ModelSpec m = parse_llama_like(c);
  MoeSpec e;
  e.experts = c.get_int("num_local_experts");
  e.top_k = c.get_int("num_experts_per_tok");
  e.expert_ffn = m.ffn;
  e.router = RouterKind::Softmax;
  m.moe = e;
  return m;
}

// Qwen2MoeConfig / Qwen3MoeConfig (transformers configuration_qwen2_moe.py,
// configuration_qwen3_moe.py): num_experts routed SwiGLU experts of moe_intermediate_size,
// num_experts_per_tok per token, softmax router; Qwen2-MoE adds one shared expert of
// shared_expert_intermediate_size (absent or 0 in Qwen3-MoE). A layer is dense when it is
// in mlp_only_layers or (index + 1) % decoder_sparse_step != 0: moe.layer_step is
// decoder_sparse_step (the same rule, models/moe_spec.h), and mlp_only_layers must be a
// prefix 0..k-1 (moe.first_dense_layers = k).
ModelSpec parse_qwen_moe(const HfConfig& c, const json& j) {
  ModelSpec m = parse_llama_like(c);
  refuse_if_true(c, "attention_bias", "a bias on the attention projections");
  MoeSpec e;
  e.experts = c.get_int("num_experts");
  e.top_k = c.get_int("num_experts_per_tok");
  e.expert_ffn = c.get_int("moe_intermediate_size");
  if (auto sh = c.get_int_opt("shared_expert_intermediate_size"); sh && *sh > 0) {
    e.shared_experts = 1;
    e.shared_expert_ffn = *sh;
  }
  e.router = RouterKind::Softmax;
  e.layer_step = c.get_int_opt("decoder_sparse_step").value_or(1);
  if (c.has("mlp_only_layers")) {
    const json& v = j.at("mlp_only_layers");
    if (!v.is_array())
      input_error("{}: config.json key 'mlp_only_layers' must be a list of layer indices, got {}",
                  c.source(), v.dump());
    std::int64_t k = 0;
    for (const json& x : v) {
      if (!x.is_number_integer() || x.get<std::int64_t>() != k)
        input_error("{}: config.json mlp_only_layers {} is not a prefix 0, 1, ..., k-1: dense layers "
                    "between MoE layers are not expressible in strata's model spec",
                    c.source(), v.dump());
      ++k;
    }
    e.first_dense_layers = k;
  }
  m.moe = e;
  return m;
}

// DeepseekV2Config / DeepseekV3Config (transformers configuration_deepseek_v3.py at
// 0fc683d1cd949b6c802499b77edd32206dbe86c6, modeling_deepseek_v3.py at
// f5a9ec512fa9fe69e51ea0c6388c68d50de567b3): multi-head latent attention (q_a_proj to
// q_lora_rank, or one q_proj when q_lora_rank is null; kv_a_proj_with_mqa to kv_lora_rank +
// qk_rope_head_dim; RMSNorms on both latents; q_b_proj, kv_b_proj per head; o_proj from
// heads * v_head_dim); the first first_k_dense_replace layers have the dense MLP of
// intermediate_size, the rest n_routed_experts experts of moe_intermediate_size (top
// num_experts_per_tok) and n_shared_experts shared ones (one MLP of n_shared *
// moe_intermediate_size: the same weights). The router's e_score_correction_bias is a
// buffer, not a parameter. scoring_func: V3 sigmoid, V2 softmax by default.
ModelSpec parse_deepseek(const HfConfig& c, bool v3) {
  ModelSpec m;
  m.hidden = c.get_int("hidden_size");
  m.layers = c.get_int("num_hidden_layers");
  m.heads = c.get_int("num_attention_heads");
  m.kv_heads = m.heads;  // MLA expands K and V for every head
  m.ffn = c.get_int("intermediate_size");
  m.vocab = c.get_int("vocab_size");
  m.seq_len = c.get_int("max_position_embeddings");
  m.activation = hf_activation(c, "hidden_act", "silu");
  if (m.activation != Activation::SwiGlu)
    input_error("{}: config.json hidden_act '{}' in DeepSeek's gated MLP is not expressible (expected silu)",
                c.source(), c.get_string("hidden_act", "silu"));
  m.norm = Norm::RmsNorm;
  m.positions = Positions::Rope;
  m.rope_base = c.get_positive_double("rope_theta", 10000.0);
  m.tied_embeddings = c.get_bool("tie_word_embeddings", false);
  refuse_if_true(c, "attention_bias", "a bias on the latent-attention projections");
  // DeepSeek-V3 trains with its multi-token-prediction depth (technical report sec. 2.2);
  // the published config has 1 (HF checkpoint layer 61: enorm, hnorm, eh_proj, a decoder
  // layer and shared_head, whose embedding and head are copies of the main model's).
  if (auto n = c.get_int_opt("num_nextn_predict_layers")) {
    if (*n < 0 || *n > kMaxLayers)
      input_error("{}: config.json num_nextn_predict_layers ({}) must be in 0 .. {}", c.source(), *n, kMaxLayers);
    m.mtp_layers = *n;
  }
  if (auto f = c.get_int_opt("moe_layer_freq"); f && *f != 1)
    input_error("{}: config.json moe_layer_freq ({}) interleaves dense and MoE layers, which "
                "strata's model spec cannot express (expected 1)", c.source(), *f);
  MlaSpec a;
  a.q_lora_rank = c.get_int_opt("q_lora_rank").value_or(0);
  a.kv_lora_rank = c.get_int("kv_lora_rank");
  a.qk_nope_head_dim = c.get_int("qk_nope_head_dim");
  a.qk_rope_head_dim = c.get_int("qk_rope_head_dim");
  a.v_head_dim = c.get_int("v_head_dim");
  m.mla = a;
  MoeSpec e;
  e.experts = c.get_int("n_routed_experts");
  e.top_k = c.get_int("num_experts_per_tok");
  e.expert_ffn = c.get_int("moe_intermediate_size");
  e.shared_experts = c.get_int_opt("n_shared_experts").value_or(0);
  e.shared_expert_ffn = e.shared_experts > 0 ? e.expert_ffn : 0;
  e.first_dense_layers = c.get_int_opt("first_k_dense_replace").value_or(0);
  const std::string scoring = c.get_string("scoring_func", v3 ? "sigmoid" : "softmax");
  if (scoring != "sigmoid" && scoring != "softmax")
    input_error("{}: config.json scoring_func '{}' is not supported (expected softmax or sigmoid)",
                c.source(), scoring);
  e.router = scoring == "sigmoid" ? RouterKind::Sigmoid : RouterKind::Softmax;
  // Group-limited routing: topk_method noaux_tc (V3) and group_limited_greedy (V2) pick
  // topk_group of n_group expert groups first (modeling_deepseek_v3.py get_topk_indices);
  // greedy (V2-Lite) ignores the groups.
  const std::string topk_method = c.get_string("topk_method", v3 ? "noaux_tc" : "greedy");
  if (topk_method == "noaux_tc" || topk_method == "group_limited_greedy") {
    const std::int64_t groups = c.get_int_opt("n_group").value_or(1);
    const std::int64_t topk_group = c.get_int_opt("topk_group").value_or(groups);
    if (groups < 1 || topk_group < 1 || topk_group > groups)
      input_error("{}: config.json topk_group ({}) must be in 1 .. n_group ({})", c.source(), topk_group, groups);
    if (groups > 1 && topk_group < groups) {
      e.groups = groups;
      e.max_groups_per_token = topk_group;
    }
  } else if (topk_method != "greedy") {
    input_error("{}: config.json topk_method '{}' is not supported (expected greedy, group_limited_greedy "
                "or noaux_tc)", c.source(), topk_method);
  }
  m.moe = e;
  return m;
}

// Llama4TextConfig (huggingface/transformers src/transformers/models/llama4/
// configuration_llama4.py at 008e5743, modeling_llama4.py at 000c33fd): Llama blocks
// (RMSNorm, RoPE, grouped-query attention, head_dim) whose MLP is, on the layers listed in
// moe_layers (default: every interleave_moe_layer_step-th layer, 0-based
// range(step - 1, layers, step)), num_local_experts routed SwiGLU experts of
// intermediate_size, num_experts_per_tok per token (top-k of the router logits, then a
// sigmoid of the chosen ones), plus one shared expert of intermediate_size; every other
// layer has the dense SwiGLU MLP of intermediate_size_mlp. Not in the spec, and left out
// because they do not change the FLOPs, parameters or bytes strata charges: the
// parameterless L2 norm of Q and K (use_qk_norm), the layers without RoPE
// (no_rope_layers), attention temperature tuning, the RoPE scaling of rope_scaling.
// Chunked attention (attention_chunk_size: tokens attend within their chunk on the RoPE
// layers) is full causal attention up to one chunk: the sequence is the shorter of
// max_position_embeddings and attention_chunk_size, so that strata's full-attention cost
// is the model's; a longer --seq overcounts the chunked layers' attention.
ModelSpec parse_llama4(const HfConfig& c, const json& j) {
  ModelSpec m = parse_llama_like(c);
  refuse_if_true(c, "attention_bias", "a bias on the attention projections");
  if (auto chunk = c.get_int_opt("attention_chunk_size"); chunk && *chunk > 0 && *chunk < m.seq_len)
    m.seq_len = *chunk;
  MoeSpec e;
  e.experts = c.get_int("num_local_experts");
  e.top_k = c.get_int("num_experts_per_tok");
  e.expert_ffn = c.get_int("intermediate_size");
  e.shared_experts = 1;  // Llama4TextMoe: one shared_expert MLP of intermediate_size
  e.shared_expert_ffn = e.expert_ffn;
  e.router = RouterKind::Sigmoid;
  e.layer_step = c.get_int_opt("interleave_moe_layer_step").value_or(1);  // Llama4TextConfig default 1
  if (e.layer_step < 1 || e.layer_step > m.layers)
    input_error("{}: config.json interleave_moe_layer_step ({}) must be in 1 .. num_hidden_layers ({})",
                c.source(), e.layer_step, m.layers);
  if (c.has("moe_layers")) {  // an explicit list overrides the step
    const json& v = j.at("moe_layers");
    const auto refuse = [&] {
      input_error("{}: config.json moe_layers {} is not every k-th layer (k - 1, 2k - 1, ... up to "
                  "num_hidden_layers): other layouts of dense and MoE layers are not expressible in "
                  "strata's model spec",
                  c.source(), v.dump());
    };
    if (!v.is_array() || v.empty() || !v[0].is_number_integer()) refuse();
    const std::int64_t step = v[0].get<std::int64_t>() + 1;
    if (step < 1 || step > m.layers) refuse();
    std::size_t i = 0;
    for (std::int64_t l = step - 1; l < m.layers; l += step, ++i)
      if (i >= v.size() || !v[i].is_number_integer() || v[i].get<std::int64_t>() != l) refuse();
    if (i != v.size()) refuse();
    e.layer_step = step;
  }
  m.moe = e;
  // The dense layers' MLP; without dense layers it is not used (the expert width stands in).
  if (auto mlp = c.get_int_opt("intermediate_size_mlp")) m.ffn = *mlp;
  else if (m.has_dense_layers())
    input_error("{}: config.json key 'intermediate_size_mlp' is missing (the dense layers' MLP width; "
                "interleave_moe_layer_step {} leaves dense layers)", c.source(), e.layer_step);
  return m;
}

// A Llama4Config (model_type llama4, Llama4ForConditionalGeneration) nests the text decoder
// in text_config next to the vision tower (vision_config): strata plans the text decoder,
// the model that pre-training runs; the vision tower and its projector are not modelled.
// Keys the outer config carries for the whole model (tie_word_embeddings, _name_or_path)
// fill in where text_config has none.
json llama4_text_config(const json& outer, const std::string& source) {
  if (!outer.contains("text_config") || !outer.at("text_config").is_object())
    input_error("{}: config.json model_type 'llama4' needs a text_config object (the text decoder)", source);
  json text = outer.at("text_config");
  if (text.contains("model_type") && text.at("model_type") != "llama4_text" && text.at("model_type") != "llama4")
    input_error("{}: config.json text_config.model_type {} is not llama4_text", source,
                text.at("model_type").dump());
  text["model_type"] = "llama4_text";
  for (const char* k : {"tie_word_embeddings", "_name_or_path"})
    if (!text.contains(k) && outer.contains(k)) text[k] = outer.at(k);
  return text;
}

ModelSpec parse_gpt2(const HfConfig& c) {
  ModelSpec m;
  m.hidden = c.get_int("n_embd");
  m.layers = c.get_int("n_layer");
  m.heads = c.get_int("n_head");
  m.kv_heads = m.heads;
  m.ffn = c.get_int_opt("n_inner").value_or(m.hidden > 0 && m.hidden <= kMaxFfn ? 4 * m.hidden : m.hidden);
  m.vocab = c.get_int("vocab_size");
  if (c.has("n_positions")) m.seq_len = c.get_int("n_positions");
  else if (c.has("n_ctx")) m.seq_len = c.get_int("n_ctx");
  else input_error("{}: config.json key 'n_positions' (or 'n_ctx') is missing", c.source());
  m.activation = hf_activation(c, "activation_function", "gelu_new");
  if (m.activation != Activation::Gelu)
    input_error("{}: config.json activation_function must be a gelu variant for GPT2Config",
                c.source());
  m.norm = Norm::LayerNorm;
  m.positions = Positions::Learned;
  m.tied_embeddings = c.get_bool("tie_word_embeddings", true);  // PretrainedConfig default
  return m;
}


}  // namespace

ModelSpec parse_hf_config(const std::string& text, const std::string& source) {
  json j;
  try {
    j = strata::parse_json(text);
  } catch (const json::parse_error& e) {
    input_error("{}: malformed JSON at byte {}: {}", source, e.byte, json_message(e));
  } catch (const json::exception& e) {  // e.g. out_of_range: a number that overflows
    input_error("{}: malformed JSON: {}", source, json_message(e));
  }
  if (!j.is_object())
    input_error("{}: expected a JSON object (a HuggingFace config.json), got {}", source,
                j.type_name());
  if (j.contains("model_type") && j.at("model_type") == "llama4") j = llama4_text_config(j, source);
  HfConfig c(j, source);
  ModelSpec m;
  refuse_unexpressible(c);
  if (c.has("model_type")) {
    // Read by model_type from the allow-list; its key family must be there.
    const std::string type = c.get_string("model_type", "");
    const HfType* t = nullptr;
    std::string allowed;
    for (const auto& h : kHfTypes) {
      if (type == h.model_type) t = &h;
      allowed += (allowed.empty() ? "" : ", ") + std::string(h.model_type);
    }
    if (!t)
      input_error("{}: config.json model_type '{}' is not supported (supported: {})", source, type, allowed);
    if (t->family == HfFamily::Gpt2 && !c.has("n_embd"))
      input_error("{}: config.json model_type 'gpt2' needs GPT2Config keys (n_embd, n_layer, n_head, ...)", source);
    if (t->family != HfFamily::Gpt2 && !c.has("hidden_size"))
      input_error("{}: config.json model_type '{}' needs hidden_size, num_hidden_layers, ...", source, type);
    switch (t->family) {
      case HfFamily::Gpt2: refuse_sparse_keys(c, type); m = parse_gpt2(c); break;
      case HfFamily::Llama: refuse_sparse_keys(c, type); m = parse_llama_like(c); break;
      case HfFamily::Mixtral: m = parse_mixtral(c); break;
      case HfFamily::QwenMoe: m = parse_qwen_moe(c, j); break;
      case HfFamily::DeepSeek: m = parse_deepseek(c, type == "deepseek_v3"); break;
      case HfFamily::Llama4: m = parse_llama4(c, j); break;
    }
    // Qwen3 and Qwen3-MoE attention (transformers modeling_qwen3.py / modeling_qwen3_moe.py,
    // Qwen3Attention): q_norm and k_norm, an RMSNorm of head_dim over each head of Q and K
    // before RoPE; no config key switches them off. Qwen3 has no attention bias
    // (attention_bias, default false).
    if (type == "qwen3" || type == "qwen3_moe") {
      refuse_if_true(c, "attention_bias", "a bias on the attention projections");
      m.qk_norm = true;
    }
  } else if (c.has("n_embd")) {
    refuse_sparse_keys(c, "");
    m = parse_gpt2(c);
  } else if (c.has("hidden_size")) {
    refuse_sparse_keys(c, "");
    m = parse_llama_like(c);
  } else
    input_error("{}: not a recognised HuggingFace config.json: expected LlamaConfig/"
                "MistralConfig keys (hidden_size, num_hidden_layers, num_attention_heads, ...) "
                "or GPT2Config keys (n_embd, n_layer, n_head, ...)",
                source);
  m.name = c.get_string("_name_or_path", "");
  if (m.name.empty()) {
    std::string stem = file_stem(source);
    // A file called config.json is named after its folder (the HF model directory).
    if (stem == "config") {
      std::string dir = std::filesystem::path(source).parent_path().filename().string();
      if (!dir.empty()) stem = dir;
    }
    m.name = stem;
  }
  if (auto v = check_spec(m)) {
    const bool gpt2 = c.has("n_embd");
    const std::pair<const char*, std::pair<const char*, const char*>> keys[] = {
        {"layers", {"num_hidden_layers", "n_layer"}}, {"hidden", {"hidden_size", "n_embd"}},
        {"heads", {"num_attention_heads", "n_head"}}, {"kv_heads", {"num_key_value_heads", "n_head"}},
        {"ffn", {c.has("intermediate_size_mlp") ? "intermediate_size_mlp" : "intermediate_size", "n_inner"}},    {"vocab", {"vocab_size", "vocab_size"}},
        {"seq_len", {"max_position_embeddings", "n_positions"}}, {"name", {"_name_or_path", "_name_or_path"}},
        {"head_dim", {"head_dim", "head_dim"}},
        {"moe.experts", {m.mla ? "n_routed_experts" : c.has("num_local_experts") ? "num_local_experts" : "num_experts", ""}},
        {"moe.top_k", {"num_experts_per_tok", ""}},
        {"moe.expert_ffn", {c.has("moe_intermediate_size") ? "moe_intermediate_size" : "intermediate_size", ""}},
        {"moe.shared_experts", {"n_shared_experts", ""}},
        {"moe.shared_expert_ffn", {c.has("shared_expert_intermediate_size") ? "shared_expert_intermediate_size" : "moe_intermediate_size", ""}},
        {"moe.first_dense_layers", {m.mla ? "first_k_dense_replace" : "mlp_only_layers", ""}},
        {"moe.layer_step", {c.has("interleave_moe_layer_step") ? "interleave_moe_layer_step" : "decoder_sparse_step", ""}},
        {"moe.groups", {"n_group", ""}}, {"moe.max_groups_per_token", {"topk_group", ""}},
        {"mla.q_lora_rank", {"q_lora_rank", ""}}, {"mla.kv_lora_rank", {"kv_lora_rank", ""}},
        {"mla.qk_nope_head_dim", {"qk_nope_head_dim", ""}}, {"mla.qk_rope_head_dim", {"qk_rope_head_dim", ""}},
        {"mla.v_head_dim", {"v_head_dim", ""}}};
    std::string key;
    for (const auto& [f, k] : keys)
      if (v->field == f) key = gpt2 ? k.second : k.first;
    input_error("{}: model.{} {} (config.json key '{}')", source, v->field, v->rule, key);
  }
  return m;
}


}  // namespace strata::models
