// Small models the tests build, the shape in one call: the rest of ModelSpec keeps its
// defaults (GPT: GELU, LayerNorm, learned positions, tied embeddings); llama_style turns
// one into the Llama architecture. Shared by the component tests (tests/<component>/).
#pragma once
#include <cstdint>
#include <string>
#include <utility>

#include "models/model_spec.h"

namespace strata::testing {

inline models::ModelSpec test_model(std::string name, std::int64_t layers, std::int64_t hidden,
                                    std::int64_t heads, std::int64_t kv_heads, std::int64_t ffn,
                                    std::int64_t vocab, std::int64_t seq_len) {
  return {.name = std::move(name), .layers = layers, .hidden = hidden, .heads = heads,
          .kv_heads = kv_heads, .ffn = ffn, .vocab = vocab, .seq_len = seq_len,
          .mla = {}, .moe = {}};
}

// SwiGLU, RMSNorm, RoPE, untied embeddings (no biases: models::has_bias).
inline models::ModelSpec llama_style(models::ModelSpec m) {
  m.activation = models::Activation::SwiGlu;
  m.norm = models::Norm::RmsNorm;
  m.positions = models::Positions::Rope;
  m.tied_embeddings = false;
  return m;
}

}  // namespace strata::testing
