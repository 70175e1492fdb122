#include "models/model_spec.h"
#include "common/json_text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/yaml_reader.h"
#include "models/catalog.h"

namespace strata::models {
namespace {

// One broken rule: the field it is about and the rest of the sentence
// ("(0) must be > 0"), so callers can prefix the field with a file and line.
struct Violation {
  std::string field;
  std::string rule;
};

std::optional<Violation> check_size(const char* field, std::int64_t v, std::int64_t max) {
  if (v <= 0) return Violation{field, fmt::format("({}) must be > 0", v)};
  if (v > max) return Violation{field, fmt::format("({}) is too large (at most {})", v, max)};
  return std::nullopt;
}

std::optional<Violation> check_spec(const ModelSpec& m) {
  if (m.name.empty()) return Violation{"name", "must not be empty"};
  const std::pair<const char*, std::pair<std::int64_t, std::int64_t>> sizes[] = {
      {"layers", {m.layers, kMaxLayers}},   {"hidden", {m.hidden, kMaxHidden}},
      {"heads", {m.heads, kMaxHeads}},      {"kv_heads", {m.kv_heads, kMaxHeads}},
      {"ffn", {m.ffn, kMaxFfn}},            {"vocab", {m.vocab, kMaxVocab}},
      {"seq_len", {m.seq_len, kMaxSeqLen}},
  };
  for (const auto& [field, vm] : sizes)
    if (auto v = check_size(field, vm.first, vm.second)) return v;
  if (m.hidden % m.heads != 0)
    return Violation{"hidden", fmt::format("({}) must be divisible by model.heads ({})", m.hidden,
                                           m.heads)};
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)
    return Violation{"kv_heads", fmt::format("({}) must divide model.heads ({})", m.kv_heads,
                                             m.heads)};
  return std::nullopt;
}

std::string file_stem(const std::string& path) {
  std::string stem = std::filesystem::path(path).stem().string();
  return stem.empty() ? path : stem;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// ---- HuggingFace config.json --------------------------------------------------------

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
enum class HfFamily { Llama, Gpt2 };
struct HfType {
  const char* model_type;
  HfFamily family;
};
constexpr HfType kHfTypes[] = {
    {"llama", HfFamily::Llama}, {"mistral", HfFamily::Llama}, {"qwen2", HfFamily::Llama}, {"gpt2", HfFamily::Gpt2}};

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
  if (c.has("num_local_experts") || c.has("num_experts"))
    input_error("{}: mixture-of-experts configs (num_local_experts / num_experts) are not "
                "supported; strata models dense decoder-only transformers",
                c.source());
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
  m.tied_embeddings = c.get_bool("tie_word_embeddings", false);  // LlamaConfig default
  if (auto hd = c.get_int_opt("head_dim")) {
    if (m.heads > 0 && *hd != m.hidden / m.heads)
      input_error("{}: config.json head_dim ({}) differs from hidden_size / num_attention_heads "
                  "({} / {}); only head_dim = hidden/heads is supported",
                  c.source(), *hd, m.hidden, m.heads);
  }
  return m;
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

void validate(const ModelSpec& spec, const std::string& source) {
  if (auto v = check_spec(spec)) input_error("{}: model.{} {}", source, v->field, v->rule);
}

ModelSpec read_model(const YamlReader& r) {
  r.expect_keys({"name", "source", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab",
                 "seq_len", "activation", "norm", "positions", "tied_embeddings"});
  ModelSpec m;
  m.name = r.get_string("name", file_stem(r.source()));
  if (r.has("source")) (void)r.get_string("source");  // provenance text, must be a string
  m.layers = r.get_int("layers");
  m.hidden = r.get_int("hidden");
  m.heads = r.get_int("heads");
  m.kv_heads = r.get_int("kv_heads", m.heads);
  m.ffn = r.get_int("ffn", m.hidden > 0 && m.hidden <= kMaxFfn ? 4 * m.hidden : m.hidden);
  m.vocab = r.get_int("vocab");
  m.seq_len = r.get_int("seq_len");
  m.activation =
      r.get_enum("activation", {"gelu", "swiglu"}, "gelu") == "gelu" ? Activation::Gelu
                                                                     : Activation::SwiGlu;
  m.norm = r.get_enum("norm", {"layernorm", "rmsnorm"}, "layernorm") == "layernorm"
               ? Norm::LayerNorm
               : Norm::RmsNorm;
  const char* dflt_pos = m.activation == Activation::Gelu ? "learned" : "rope";
  m.positions = r.get_enum("positions", {"learned", "rope"}, dflt_pos) == "learned"
                    ? Positions::Learned
                    : Positions::Rope;
  m.tied_embeddings = r.get_bool("tied_embeddings", true);
  if (auto v = check_spec(m)) throw InputError(fmt::format("{} {}", r.where(v->field), v->rule));
  return m;
}

ModelSpec parse_model_yaml(const std::string& text, const std::string& source) {
  return read_model(YamlReader(parse_yaml(text, source), source, "model"));
}

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
    if (t->family == HfFamily::Llama && !c.has("hidden_size"))
      input_error("{}: config.json model_type '{}' needs hidden_size, num_hidden_layers, ...", source, type);
    m = t->family == HfFamily::Gpt2 ? parse_gpt2(c) : parse_llama_like(c);
  } else if (c.has("n_embd")) m = parse_gpt2(c);
  else if (c.has("hidden_size")) m = parse_llama_like(c);
  else
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
        {"ffn", {"intermediate_size", "n_inner"}},    {"vocab", {"vocab_size", "vocab_size"}},
        {"seq_len", {"max_position_embeddings", "n_positions"}}, {"name", {"_name_or_path", "_name_or_path"}}};
    std::string key;
    for (const auto& [f, k] : keys)
      if (v->field == f) key = gpt2 ? k.second : k.first;
    input_error("{}: model.{} {} (config.json key '{}')", source, v->field, v->rule, key);
  }
  return m;
}

ModelSpec load_model(const std::string& name_or_path) {
  namespace fs = std::filesystem;
  if (name_or_path.empty()) input_error("--model: empty model name (expected a catalog name or a "
                                        "YAML/config.json path)");
  const std::string ext = lower(fs::path(name_or_path).extension().string());
  const bool is_path = ext == ".yaml" || ext == ".yml" || ext == ".json" ||
                       name_or_path.find('/') != std::string::npos;
  if (is_path) {
    std::error_code ec;
    std::string file = name_or_path;
    if (fs::is_directory(file, ec)) {
      file = (fs::path(file) / "config.json").string();
      if (!fs::is_regular_file(file, ec))
        input_error("model path '{}' is a folder without a config.json", name_or_path);
    } else if (!fs::exists(file, ec)) {
      input_error("model file '{}' does not exist", name_or_path);
    }
    std::string text = read_file(file);
    std::string fext = lower(fs::path(file).extension().string());
    bool json_text = fext == ".json";
    if (fext != ".json" && fext != ".yaml" && fext != ".yml") {
      auto first = text.find_first_not_of(" \t\r\n");
      json_text = first != std::string::npos && text[first] == '{';
    }
    return json_text ? parse_hf_config(text, file) : parse_model_yaml(text, file);
  }
  if (auto yaml = find_catalog_model(name_or_path))
    return parse_model_yaml(*yaml, "catalog:" + name_or_path);
  std::string hint;
  for (const auto& n : closest_model_names(name_or_path)) hint += (hint.empty() ? "" : ", ") + n;
  if (hint.empty())
    input_error("unknown model '{}'; `strata models` lists them, or pass a YAML/config.json path",
                name_or_path);
  input_error("unknown model '{}' (did you mean: {}?); `strata models` lists them, or pass a "
              "YAML/config.json path",
              name_or_path, hint);
}

ModelSpec with_seq_len(ModelSpec spec, std::int64_t seq_len) {
  spec.seq_len = seq_len;
  if (auto v = check_spec(spec)) {
    if (v->field == "seq_len") input_error("--seq ({}) must be in 1 .. {}", seq_len, kMaxSeqLen);
    validate(spec, "--seq");
  }
  return spec;
}

std::string to_yaml(const ModelSpec& m) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "name" << YAML::Value << m.name;
  e << YAML::Key << "layers" << YAML::Value << m.layers;
  e << YAML::Key << "hidden" << YAML::Value << m.hidden;
  e << YAML::Key << "heads" << YAML::Value << m.heads;
  e << YAML::Key << "kv_heads" << YAML::Value << m.kv_heads;
  e << YAML::Key << "ffn" << YAML::Value << m.ffn;
  e << YAML::Key << "vocab" << YAML::Value << m.vocab;
  e << YAML::Key << "seq_len" << YAML::Value << m.seq_len;
  e << YAML::Key << "activation" << YAML::Value << to_string(m.activation);
  e << YAML::Key << "norm" << YAML::Value << to_string(m.norm);
  e << YAML::Key << "positions" << YAML::Value << to_string(m.positions);
  e << YAML::Key << "tied_embeddings" << YAML::Value << m.tied_embeddings;
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

const char* to_string(Activation a) { return a == Activation::Gelu ? "gelu" : "swiglu"; }
const char* to_string(Norm n) { return n == Norm::LayerNorm ? "layernorm" : "rmsnorm"; }
const char* to_string(Positions p) { return p == Positions::Learned ? "learned" : "rope"; }

}  // namespace strata::models
