#include "models/model_stats.h"

#include <cmath>

#include <gtest/gtest.h>

#include "models/catalog.h"

using namespace strata::models;

namespace {
double rel_err(double a, double b) { return std::fabs(a - b) / std::fabs(b); }
}  // namespace

// For GPT blocks (ffn = 4h, MHA) the general training-FLOPs sum and Narayanan's
// closed form are the same number reached two ways.
TEST(ModelStats, TrainingFlopsWithRecomputeEqualNarayananForGpt) {
  for (const auto& e : model_catalog()) {
    ModelSpec m = load_model(e.name);
    if (m.activation != Activation::Gelu || m.ffn != 4 * m.hidden || m.kv_heads != m.heads) continue;
    SCOPED_TRACE(e.name);
    EXPECT_LT(rel_err(training_flops(m, 512, true), narayanan_flops_per_iteration(m, 512)), 1e-12);
    // Without recompute: 3x the forward, i.e. 72*B*s*l*h^2*(1 + s/6h + V/12lh).
    const double B = 512, s = m.seq_len, l = m.layers, h = m.hidden, V = m.vocab;
    EXPECT_LT(rel_err(model_flops_per_iteration(m, 512),
                  72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))),
              1e-12);
  }
}

TEST(ModelStats, Gpt3FlopsPerIterationByHand) {
  // Narayanan et al. 2021, 175B row: B = 1536, s = 2048, l = 96, h = 12288, V = 51200.
  ModelSpec m = load_model("gpt3-175b");
  const double by_hand = 96.0 * 1536 * 2048 * 96 * 12288.0 * 12288.0 *
                         (1 + 2048.0 / (6 * 12288) + 51200.0 / (16 * 96 * 12288.0));
  EXPECT_LT(rel_err(narayanan_flops_per_iteration(m, 1536), by_hand), 1e-12);
  // About 6 * params * tokens * 4/3 (recompute) for large h: within 5%.
  EXPECT_LT(rel_err(training_flops(m, 1536, true), 8 * total_params(m) * 1536 * 2048), 0.05);
}

TEST(ModelStats, ActivationBytesEqualKorthikantiForGpt) {
  for (const char* name : {"gpt3-175b", "megatron-1008b", "gpt2-124m", "tiny"}) {
    ModelSpec m = load_model(name);
    EXPECT_LT(rel_err(block_activation_bytes(m, 4), korthikanti_activation_bytes_per_layer(m, 4)), 1e-12)
        << name;
  }
  // GPT-3 175B, b = 1: 2048*12288*(34 + 5*96*2048/12288) bytes = 2.87e9 bytes (2.67 GiB) per layer.
  ModelSpec m = load_model("gpt3-175b");
  EXPECT_DOUBLE_EQ(korthikanti_activation_bytes_per_layer(m, 1), 2048.0 * 12288 * (34 + 80));
}

TEST(ModelStats, LlamaBlockTermsByHand) {
  // Llama 2 7B block: 4h^2 attention + 3*h*ffn MLP + 2h RMSNorm weights, no biases.
  ModelSpec m = load_model("llama2-7b");
  EXPECT_EQ(block_params(m), 4.0 * 4096 * 4096 + 3.0 * 4096 * 11008 + 2 * 4096);
  // Activation: s*b*(14h + 4h (K, V) + 6*ffn) + 5*a*s^2*b.
  const double s = 4096, h = 4096, f = 11008, a = 32;
  EXPECT_DOUBLE_EQ(block_activation_bytes(m, 1), s * (18 * h + 6 * f) + 5 * a * s * s);
  // GQA shrinks the K/V terms: Llama 3 8B has 8 KV heads of 128.
  ModelSpec l3 = load_model("llama3-8b");
  EXPECT_EQ(block_params(l3), 4096.0 * (4096 + 2 * 1024) + 4096.0 * 4096 + 3.0 * 4096 * 14336 + 2 * 4096);
}
