#include "models/model_spec.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <system_error>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/yaml_reader.h"
#include "models/catalog.h"
#include "models/detail/spec_check.h"

namespace strata::models {
namespace detail {
namespace {

std::optional<Violation> check_size(const char* field, std::int64_t v, std::int64_t max) {
  if (v <= 0) return Violation{field, fmt::format("({}) must be > 0", v)};
  if (v > max) return Violation{field, fmt::format("({}) is too large (at most {})", v, max)};
  return std::nullopt;
}

}  // namespace

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
  if (m.explicit_head_dim != 0)
    if (auto v = check_size("head_dim", m.explicit_head_dim, kMaxHidden)) return v;
  if (m.explicit_head_dim == 0 && !m.mla && m.hidden % m.heads != 0)
    return Violation{"hidden", fmt::format("({}) must be divisible by model.heads ({}) "
                                           "(or give model.head_dim)", m.hidden, m.heads)};
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)
    return Violation{"kv_heads", fmt::format("({}) must divide model.heads ({})", m.kv_heads,
                                             m.heads)};
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    if (m.kv_heads != m.heads)
      return Violation{"kv_heads", fmt::format("({}) must equal model.heads ({}) with mla attention "
                                               "(every head expands its own K and V)", m.kv_heads, m.heads)};
    if (a.q_lora_rank < 0 || a.q_lora_rank > kMaxHidden)
      return Violation{"mla.q_lora_rank", fmt::format("({}) must be in 0 .. {} (0 = no query compression)",
                                                      a.q_lora_rank, kMaxHidden)};
    const std::pair<const char*, std::int64_t> dims[] = {{"mla.kv_lora_rank", a.kv_lora_rank},
                                                         {"mla.qk_nope_head_dim", a.qk_nope_head_dim},
                                                         {"mla.qk_rope_head_dim", a.qk_rope_head_dim},
                                                         {"mla.v_head_dim", a.v_head_dim}};
    for (const auto& [field, v] : dims)
      if (auto bad = check_size(field, v, kMaxHidden)) return bad;
  }
  if (m.mtp_layers < 0 || m.mtp_layers > kMaxLayers)
    return Violation{"mtp_layers", fmt::format("({}) must be in 0 .. {} (0 = no multi-token prediction)",
                                               m.mtp_layers, kMaxLayers)};
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    if (auto v = check_size("moe.experts", e.experts, kMaxHeads)) return v;
    if (e.top_k < 1 || e.top_k > e.experts)
      return Violation{"moe.top_k", fmt::format("({}) must be in 1 .. moe.experts ({})", e.top_k, e.experts)};
    if (auto v = check_size("moe.expert_ffn", e.expert_ffn, kMaxFfn)) return v;
    if (e.shared_experts < 0 || e.shared_experts > kMaxHeads)
      return Violation{"moe.shared_experts", fmt::format("({}) must be in 0 .. {}", e.shared_experts, kMaxHeads)};
    if (e.shared_experts > 0)
      if (auto v = check_size("moe.shared_expert_ffn", e.shared_expert_ffn, kMaxFfn)) return v;
    if (e.first_dense_layers < 0 || e.first_dense_layers >= m.layers)
      return Violation{"moe.first_dense_layers",
                       fmt::format("({}) must be in 0 .. model.layers - 1 ({})", e.first_dense_layers,
                                   m.layers - 1)};
    if (e.layer_step < 1 || e.layer_step > m.layers)
      return Violation{"moe.layer_step",
                       fmt::format("({}) must be in 1 .. model.layers ({}) (1 = every block MoE)",
                                   e.layer_step, m.layers)};
    if (m.first_moe_layer() == 0)
      return Violation{"moe.layer_step",
                       fmt::format("({}) leaves no MoE block after moe.first_dense_layers ({}) in "
                                   "model.layers ({})", e.layer_step, e.first_dense_layers, m.layers)};
    if (e.groups < 0 || e.groups > e.experts || (e.groups > 0 && e.experts % e.groups != 0))
      return Violation{"moe.groups", fmt::format("({}) must divide moe.experts ({}) (0 = no expert groups)",
                                                 e.groups, e.experts)};
    if (e.max_groups_per_token < 0 || e.max_groups_per_token > std::max<std::int64_t>(e.groups, 0) ||
        (e.max_groups_per_token > 0 && e.max_groups_per_token * (e.experts / e.groups) < e.top_k))
      return Violation{"moe.max_groups_per_token",
                       fmt::format("({}) must be in 0 .. moe.groups ({}) and its groups must hold "
                                   "moe.top_k ({}) experts (0 = no limit)",
                                   e.max_groups_per_token, e.groups, e.top_k)};
    if (!(std::isfinite(e.load_imbalance) && e.load_imbalance >= 1 && e.load_imbalance <= 1e3))
      return Violation{"moe.load_imbalance",
                       fmt::format("({}) must be in 1 .. 1000 (busiest expert's tokens / mean)", e.load_imbalance)};
    if (!(e.capacity_factor == 0 || (std::isfinite(e.capacity_factor) && e.capacity_factor > 0 &&
                                     e.capacity_factor <= 1e3)))
      return Violation{"moe.capacity_factor",
                       fmt::format("({}) must be > 0 and <= 1000 (leave it out for dropless routing)",
                                   e.capacity_factor)};
  }
  return std::nullopt;
}

std::string file_stem(const std::string& path) {
  std::string stem = std::filesystem::path(path).stem().string();
  return stem.empty() ? path : stem;
}

}  // namespace detail

namespace {

using detail::check_spec;
using detail::file_stem;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

MlaSpec read_mla(const YamlReader& r) {
  r.expect_keys({"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
  MlaSpec a;
  a.q_lora_rank = r.get_int("q_lora_rank", 0);
  a.kv_lora_rank = r.get_int("kv_lora_rank");
  a.qk_nope_head_dim = r.get_int("qk_nope_head_dim");
  a.qk_rope_head_dim = r.get_int("qk_rope_head_dim");
  a.v_head_dim = r.get_int("v_head_dim");
  return a;
}

MoeSpec read_moe(const YamlReader& r) {
  r.expect_keys({"experts", "top_k", "expert_ffn", "shared_experts", "shared_expert_ffn",
                 "first_dense_layers", "layer_step", "router", "capacity_factor", "load_imbalance",
                 "groups", "max_groups_per_token"});
  MoeSpec e;
  e.experts = r.get_int("experts");
  e.top_k = r.get_int("top_k");
  e.expert_ffn = r.get_int("expert_ffn");
  e.shared_experts = r.get_int("shared_experts", 0);
  e.shared_expert_ffn = r.get_int("shared_expert_ffn", e.shared_experts > 0 ? e.expert_ffn : 0);
  e.first_dense_layers = r.get_int("first_dense_layers", 0);
  e.layer_step = r.get_int("layer_step", 1);
  e.router = r.get_enum("router", {"softmax", "sigmoid"}, "softmax") == "softmax" ? RouterKind::Softmax
                                                                                   : RouterKind::Sigmoid;
  if (r.has("capacity_factor")) e.capacity_factor = r.get_positive("capacity_factor");
  e.load_imbalance = r.has("load_imbalance") ? r.get_positive("load_imbalance") : 1.0;
  e.groups = r.get_int("groups", 0);
  e.max_groups_per_token = r.get_int("max_groups_per_token", 0);
  if (e.max_groups_per_token > 0 && e.groups == 0) r.fail("max_groups_per_token", "needs moe.groups");
  return e;
}

}  // namespace

void validate(const ModelSpec& spec, const std::string& source) {
  if (auto v = check_spec(spec)) input_error("{}: model.{} {}", source, v->field, v->rule);
}

ModelSpec read_model(const YamlReader& r) {
  r.expect_keys({"name", "source", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab",
                 "seq_len", "activation", "norm", "positions", "rope_base", "tied_embeddings", "head_dim",
                 "attention", "mla", "moe", "mtp_layers", "qk_norm"});
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
  if (r.has("rope_base")) {
    if (m.positions != Positions::Rope) r.fail("rope_base", "needs positions: rope");
    m.rope_base = r.get_positive("rope_base");
  }
  m.tied_embeddings = r.get_bool("tied_embeddings", true);
  m.explicit_head_dim = r.get_int("head_dim", 0);
  m.qk_norm = r.get_bool("qk_norm", false);
  if (r.has("mla")) m.mla = read_mla(r.child("mla"));
  if (r.has("moe")) m.moe = read_moe(r.child("moe"));
  m.mtp_layers = r.get_int("mtp_layers", 0);
  if (auto v = check_spec(m)) throw InputError(fmt::format("{} {}", r.where(v->field), v->rule));
  if (m.explicit_head_dim != 0 && m.mla)
    r.fail("head_dim", "does not apply to mla attention (its per-head widths are under mla:)");
  if (m.qk_norm && m.mla)
    r.fail("qk_norm", "does not apply to mla attention (its latent norms are part of the mla: section)");
  if (r.has("attention")) {
    const std::string a = r.get_enum("attention", {"mha", "gqa", "mla"});
    if (a != to_string(m.attention())) {
      if (a == "mla") r.fail("attention", "is mla but the model has no mla: section");
      if (m.mla) r.fail("attention", fmt::format("is {} but the model has an mla: section", a));
      r.fail("attention", fmt::format("is {} but kv_heads ({}) {} heads ({})", a, m.kv_heads,
                                      m.kv_heads == m.heads ? "equals" : "is less than", m.heads));
    }
  }
  return m;
}

ModelSpec parse_model_yaml(const std::string& text, const std::string& source) {
  return read_model(YamlReader(parse_yaml(text, source), source, "model"));
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
  if (m.positions == Positions::Rope) e << YAML::Key << "rope_base" << YAML::Value << m.rope_base;
  e << YAML::Key << "tied_embeddings" << YAML::Value << m.tied_embeddings;
  if (m.explicit_head_dim != 0) e << YAML::Key << "head_dim" << YAML::Value << m.explicit_head_dim;
  if (m.qk_norm) e << YAML::Key << "qk_norm" << YAML::Value << true;
  if (m.mtp_layers > 0) e << YAML::Key << "mtp_layers" << YAML::Value << m.mtp_layers;
  if (m.mla || m.moe) e << YAML::Key << "attention" << YAML::Value << to_string(m.attention());
  if (m.mla) {
    e << YAML::Key << "mla" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "q_lora_rank" << YAML::Value << m.mla->q_lora_rank;
    e << YAML::Key << "kv_lora_rank" << YAML::Value << m.mla->kv_lora_rank;
    e << YAML::Key << "qk_nope_head_dim" << YAML::Value << m.mla->qk_nope_head_dim;
    e << YAML::Key << "qk_rope_head_dim" << YAML::Value << m.mla->qk_rope_head_dim;
    e << YAML::Key << "v_head_dim" << YAML::Value << m.mla->v_head_dim;
    e << YAML::EndMap;
  }
  if (m.moe) {
    e << YAML::Key << "moe" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "experts" << YAML::Value << m.moe->experts;
    e << YAML::Key << "top_k" << YAML::Value << m.moe->top_k;
    e << YAML::Key << "expert_ffn" << YAML::Value << m.moe->expert_ffn;
    e << YAML::Key << "shared_experts" << YAML::Value << m.moe->shared_experts;
    e << YAML::Key << "shared_expert_ffn" << YAML::Value << m.moe->shared_expert_ffn;
    e << YAML::Key << "first_dense_layers" << YAML::Value << m.moe->first_dense_layers;
    if (m.moe->layer_step != 1) e << YAML::Key << "layer_step" << YAML::Value << m.moe->layer_step;
    e << YAML::Key << "router" << YAML::Value << to_string(m.moe->router);
    if (m.moe->capacity_factor > 0)
      e << YAML::Key << "capacity_factor" << YAML::Value << YAML::Precision(17) << m.moe->capacity_factor;
    if (m.moe->groups > 0) e << YAML::Key << "groups" << YAML::Value << m.moe->groups;
    if (m.moe->max_groups_per_token > 0)
      e << YAML::Key << "max_groups_per_token" << YAML::Value << m.moe->max_groups_per_token;
    if (m.moe->load_imbalance != 1.0)
      e << YAML::Key << "load_imbalance" << YAML::Value << YAML::Precision(17) << m.moe->load_imbalance;
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

const char* to_string(Activation a) { return a == Activation::Gelu ? "gelu" : "swiglu"; }
const char* to_string(Norm n) { return n == Norm::LayerNorm ? "layernorm" : "rmsnorm"; }
const char* to_string(Positions p) { return p == Positions::Learned ? "learned" : "rope"; }
const char* to_string(AttentionKind a) {
  return a == AttentionKind::Mha ? "mha" : a == AttentionKind::Gqa ? "gqa" : "mla";
}
const char* to_string(RouterKind r) { return r == RouterKind::Softmax ? "softmax" : "sigmoid"; }

}  // namespace strata::models
