// Helpers shared by the runtime unit tests: small model specs and a whole-model chunk
// built on one rank.
#pragma once
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "models/model_spec.h"
#include "runtime/model_chunk.h"
#include "runtime/model_dims.h"
#include "runtime/parameter_store.h"
#include "tests/test_models.h"

namespace strata::runtime::testing {

inline models::ModelSpec small_gpt() {
  return strata::testing::test_model("test-gpt", 2, 16, 4, 4, 32, 24, 6);
}

inline models::ModelSpec small_llama() {
  return strata::testing::llama_style(strata::testing::test_model("test-llama", 2, 16, 4, 2, 24, 24, 6));
}

// small_llama with a mixture-of-experts MLP in block 1 (block 0 dense): 4 experts of
// width 8, top-2 softmax routing, one shared expert of width 12.
inline models::ModelSpec small_moe() {
  models::ModelSpec s = small_llama();
  s.name = "test-moe";
  s.moe = models::MoeSpec{.experts = 4, .top_k = 2, .expert_ffn = 8, .shared_experts = 1, .shared_expert_ffn = 12,
                          .first_dense_layers = 1};
  return s;
}

inline ChunkLayout whole_model(int layers) {
  ChunkLayout c;
  c.embedding = true;
  for (int b = 0; b < layers; ++b) c.blocks.push_back(b);
  c.head = true;
  return c;
}

// A model chunk with its own parameter store. `noise` is added to every parameter after
// the seeded init (larger weights push activations out of the near-linear regime, so the
// gradient checks exercise every nonlinearity).
template <typename T>
struct TestModel {
  ModelDims dims;
  ChunkLayout layout;
  ParameterStore<T> store;
  std::unique_ptr<ModelChunk<T>> chunk;

  TestModel(const ModelDims& d, const ChunkLayout& l, std::uint64_t seed, double noise,
            const TpGroup& tp = {})
      : dims(d), layout(l) {
    for (const auto& s : ModelChunk<T>::param_specs(d, l)) store.add(s);
    store.finalize();
    store.init(seed);
    if (noise > 0) add_noise(noise, seed);
    chunk = std::make_unique<ModelChunk<T>>(d, l, store, tp);
  }
  // Noise that depends only on the parameter name and the element's full-tensor index,
  // so every TP shard receives the slice of the same perturbation.
  void add_noise(double noise, std::uint64_t seed) {
    for (const auto& e : store.entries()) {
      ParamSpec s = e.spec;
      s.init = ParamInit::Normal;
      s.init_std = noise;
      std::vector<T> n(e.numel);
      init_param(s, seed + 7777, n.data());
      for (std::size_t i = 0; i < e.numel; ++i) store.params()[e.offset + i] += n[i];
    }
  }
  double loss_and_grads(const std::vector<std::int32_t>& tokens,
                        const std::vector<std::int32_t>& targets, T token_weight) {
    store.zero_grads();
    ChunkActivations<T> acts;
    const double loss = chunk->forward(acts, tokens.data(), targets.data(), nullptr, nullptr, token_weight);
    chunk->backward(acts, nullptr, nullptr);
    return loss;
  }
  double loss_only(const std::vector<std::int32_t>& tokens, const std::vector<std::int32_t>& targets,
                   T token_weight) {
    ChunkActivations<T> acts;
    return chunk->forward(acts, tokens.data(), targets.data(), nullptr, nullptr, token_weight);
  }
};

inline std::vector<std::int32_t> random_tokens(std::size_t n, int vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::int32_t> t(n);
  for (auto& x : t) x = static_cast<std::int32_t>(rng() % static_cast<unsigned>(vocab));
  return t;
}

}  // namespace strata::runtime::testing
