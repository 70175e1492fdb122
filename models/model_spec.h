// ModelSpec: the architecture of a decoder-only transformer, as a user writes it
// (YAML), as HuggingFace ships it (config.json), or from the built-in catalog.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata::models {

enum class Activation { Gelu, SwiGlu };
enum class Norm { LayerNorm, RmsNorm };
enum class Positions { Learned, Rope };

struct ModelSpec {
  std::string name;
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;   // = heads unless grouped-query attention
  std::int64_t ffn = 0;        // MLP inner size; default 4*hidden
  std::int64_t vocab = 0;
  std::int64_t seq_len = 0;
  Activation activation = Activation::Gelu;
  Norm norm = Norm::LayerNorm;
  Positions positions = Positions::Learned;  // gelu/layernorm models default Learned, llama Rope
  bool tied_embeddings = true;

  std::int64_t head_dim() const { return hidden / heads; }
};

// Throws InputError naming the field when sizes are non-positive, absurd
// (> 1e7 layers, hidden > 1e7, ...), or inconsistent (hidden % heads, heads % kv_heads).
void validate(const ModelSpec& spec, const std::string& source);

// Parses the strata YAML model format (unknown keys rejected).
ModelSpec parse_model_yaml(const std::string& text, const std::string& source);
// Parses a HuggingFace config.json (LlamaConfig, MistralConfig, GPT2Config keys).
ModelSpec parse_hf_config(const std::string& text, const std::string& source);
// Catalog name ("gpt3-175b") or a path to a .yaml/.yml/.json file. Unknown names give
// InputError with the closest catalog names.
ModelSpec load_model(const std::string& name_or_path);
// Overrides seq_len (e.g. `--seq`) and re-validates.
ModelSpec with_seq_len(ModelSpec spec, std::int64_t seq_len);

// Serializes to the strata YAML format (parse_model_yaml(to_yaml(s)) == s).
std::string to_yaml(const ModelSpec& spec);

const char* to_string(Activation a);
const char* to_string(Norm n);
const char* to_string(Positions p);

}  // namespace strata::models
