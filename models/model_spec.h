// ModelSpec: the architecture of a decoder-only transformer, as a user writes it
// (YAML), as HuggingFace ships it (config.json), or from the built-in catalog.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/mla_spec.h"
#include "models/moe_spec.h"

namespace strata {
class YamlReader;
}

namespace strata::models {

enum class Activation { Gelu, SwiGlu };
enum class Norm { LayerNorm, RmsNorm };
enum class Positions { Learned, Rope };
// mha: kv_heads == heads; gqa: fewer K/V heads shared by groups of query heads;
// mla: multi-head latent attention (ModelSpec::mla).
enum class AttentionKind { Mha, Gqa, Mla };

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
  // RoPE base (theta) when positions is rope: 10000 is RoFormer's / Llama 1-2's and
  // Megatron-LM's --rotary-base default; Llama 3 uses 500000 (config.json rope_theta).
  // Does not change costs; the exports and the runtime must reproduce it.
  double rope_base = 10000;
  std::int64_t explicit_head_dim = 0;  // per-head width where it is not hidden/heads
                                       // (Qwen3, Gemma); 0 = hidden/heads
  // Per-head norms (the model's norm kind, head_dim weights each) on Q and K before RoPE:
  // Qwen3's q_norm / k_norm, Megatron-LM's --qk-layernorm. Not with mla (its latent norms
  // are part of MlaSpec).
  bool qk_norm = false;
  std::optional<MlaSpec> mla;          // set: multi-head latent attention
  std::optional<MoeSpec> moe;          // set: mixture-of-experts MLP (is_moe_layer)
  // Multi-token-prediction depths trained with the model (DeepSeek-V3's
  // num_nextn_predict_layers, Megatron-LM's --mtp-num-layers; 0 = none). Each depth, as
  // Megatron-Core's MultiTokenPredictionLayer builds it (NVIDIA/Megatron-LM
  // megatron/core/transformer/multi_token_prediction.py at 00611e6e): RMSNorms on the
  // previous depth's hidden state (hnorm) and on the embedding of the token one further
  // ahead (enorm), a projection of their concatenation 2h -> h (eh_proj), one transformer
  // block like the model's last (an MoE block for DeepSeek-V3), a final norm, and its own
  // cross-entropy through the shared output head; the embedding and output weights are the
  // main model's (no parameters of their own). Megatron-Core runs them on the last pipeline
  // stage, after the main head (models/model_graph.h: the head group).
  std::int64_t mtp_layers = 0;

  std::int64_t head_dim() const { return explicit_head_dim > 0 ? explicit_head_dim : hidden / heads; }
  std::int64_t q_dim() const { return heads * head_dim(); }       // width of Q and of the attention output
  std::int64_t kv_dim() const { return kv_heads * head_dim(); }  // width of K (and of V)
  AttentionKind attention() const {
    return mla ? AttentionKind::Mla : kv_heads == heads ? AttentionKind::Mha : AttentionKind::Gqa;
  }
  // Block `layer` (1-based) has the mixture-of-experts MLP: past moe.first_dense_layers and a
  // multiple of moe.layer_step (models/moe_spec.h); every other block the dense MLP of `ffn`.
  bool is_moe_layer(std::int64_t layer) const {
    return moe && layer > moe->first_dense_layers && layer % moe->layer_step == 0;
  }
  // The blocks with the MoE MLP (0 without moe).
  std::int64_t moe_layer_count() const {
    if (!moe || moe->layer_step < 1) return 0;
    const std::int64_t d = moe->first_dense_layers;
    return layers / moe->layer_step - (d > 0 ? d / moe->layer_step : 0);
  }
  // Whether some block keeps the dense MLP of `ffn` (a dense model: all of them).
  bool has_dense_layers() const { return !moe || moe_layer_count() < layers; }
  // The first MoE block (1-based; 0 without moe): what every MoE block looks like.
  std::int64_t first_moe_layer() const {
    if (!moe || moe->layer_step < 1) return 0;
    const std::int64_t step = moe->layer_step;
    const std::int64_t l = (moe->first_dense_layers / step + 1) * step;
    return l <= layers ? l : 0;
  }
  // The block of each multi-token-prediction depth is built like the last block
  // (Megatron-Core get_gpt_mtp_block_spec, megatron/core/models/gpt/gpt_layer_specs.py, takes
  // the spec of the decoder's last layer; DeepSeek-V3: an MoE block).
  bool mtp_block_is_moe() const { return is_moe_layer(layers); }
  bool operator==(const ModelSpec&) const = default;
};

// Linear layers carry biases in GPT-style (gelu) models and none in Llama-style
// (swiglu) models; the graph, the closed forms and the runtime all use this rule.
inline bool has_bias(const ModelSpec& spec) { return spec.activation == Activation::Gelu; }

// Largest sizes accepted by validate() (beyond them FLOP and byte counts stop meaning
// anything and int64 products can overflow). Layers are capped at 1e5, about 500x the
// deepest published model: the op graph holds ~12 ops per layer, and a plan search over
// a 1e6-layer graph would take minutes instead of answering.
inline constexpr std::int64_t kMaxLayers = 100'000;
inline constexpr std::int64_t kMaxHidden = 1'000'000;
inline constexpr std::int64_t kMaxHeads = 100'000;
inline constexpr std::int64_t kMaxFfn = 10'000'000;
inline constexpr std::int64_t kMaxVocab = 100'000'000;
inline constexpr std::int64_t kMaxSeqLen = 100'000'000;

// Throws InputError naming the field when sizes are non-positive, absurd
// (beyond the kMax* bounds above), or inconsistent (hidden % heads, heads % kv_heads):
// "<source>: model.heads (0) must be > 0".
void validate(const ModelSpec& spec, const std::string& source);

// Parses the strata YAML model format (unknown keys rejected). Keys: name, layers,
// hidden, heads, kv_heads (default heads), ffn (default 4*hidden), vocab, seq_len,
// activation (gelu|swiglu), norm (layernorm|rmsnorm), positions (learned|rope; default
// learned for gelu, rope for swiglu), tied_embeddings (default true), source (ignored),
// head_dim (default hidden/heads), attention (mha|gqa|mla; checked against kv_heads and
// mla), mla: {q_lora_rank (0 = none), kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
// v_head_dim}, moe: {experts, top_k, expert_ffn, shared_experts (default 0),
// shared_expert_ffn (default expert_ffn), first_dense_layers (default 0), layer_step (default
// 1: every block past first_dense_layers is MoE; 2: blocks 2, 4, ...),
// router (softmax|sigmoid, default softmax), capacity_factor (absent = dropless),
// load_imbalance, groups and max_groups_per_token (default 0: no group limit)},
// mtp_layers (default 0).
// `name` defaults to the file stem of `source`.
ModelSpec parse_model_yaml(const std::string& text, const std::string& source);
// Same, from a mapping already read (e.g. the `model:` section of a plan file); errors
// carry the reader's file, line and key path.
ModelSpec read_model(const YamlReader& reader);
// Parses a HuggingFace config.json (LlamaConfig, MistralConfig, GPT2Config keys; the
// mixture-of-experts families by model_type; DeepSeek's num_nextn_predict_layers ->
// mtp_layers). Defined in hf_config.cpp.
// Llama-style (hidden_size, ...): hidden_act silu -> swiglu, rms_norm_eps -> rmsnorm,
// rope, tie_word_embeddings default false. GPT2 (n_embd, ...): n_inner null -> 4h,
// n_positions (or n_ctx), layernorm, learned, tied by default. Name: _name_or_path,
// else the file stem (for config.json, its folder). Malformed JSON -> InputError with
// the byte offset; missing keys are named.
ModelSpec parse_hf_config(const std::string& text, const std::string& source);
// Catalog name ("gpt3-175b", case-insensitive) or a path: anything ending in
// .yaml/.yml/.json or containing '/' is a file (.json = HF config.json; a folder means
// its config.json), everything else a catalog name. Unknown names give InputError
// with the closest catalog names; missing files name the path.
ModelSpec load_model(const std::string& name_or_path);
// Overrides seq_len (e.g. `--seq`) and re-validates.
ModelSpec with_seq_len(ModelSpec spec, std::int64_t seq_len);

// Serializes to the strata YAML format (parse_model_yaml(to_yaml(s)) == s).
std::string to_yaml(const ModelSpec& spec);

const char* to_string(Activation a);
const char* to_string(Norm n);
const char* to_string(Positions p);
const char* to_string(AttentionKind a);

}  // namespace strata::models
