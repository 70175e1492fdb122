// What a MoE layer keeps for its backward, by hand, as the framework stores it
// (costmodel::ActivationStorage): the FP8 casts Transformer Engine keeps of FP8 GEMM inputs,
// and Megatron-Core r0.13's routing probabilities applied in the experts' activation (the
// combine then keeps no copy of the experts' output). Qwen3-30B-A3B at the layout
// Megatron-Bridge 25.09 publishes on 16 H100 (tp 1, micro-batch 2, seq 4096): s b = 8192
// tokens, h 2048, 128 experts, top 8, expert_ffn 768, SwiGLU, no capacity factor.
#include <gtest/gtest.h>

#include "costmodel/memory_model.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"

namespace sc = strata::costmodel;
namespace sm = strata::models;

namespace {

sm::ModelSpec qwen3_30b() {
  sm::ModelSpec m = sm::load_model("qwen3-moe-30b-a3b");
  EXPECT_EQ(m.hidden, 2048);
  EXPECT_EQ(m.moe->experts, 128);
  EXPECT_EQ(m.moe->top_k, 8);
  EXPECT_EQ(m.moe->expert_ffn, 768);
  EXPECT_EQ(m.moe->shared_experts, 0);
  EXPECT_EQ(m.moe->load_imbalance, 1.0);
  return m;
}

double routed(const sm::ModelSpec& m, bool fp8, bool probs_in_activation, bool moe_act = false) {
  sc::RecomputeModules modules;
  modules.moe_act = moe_act;
  const sc::ActivationStorage storage{.fp8_gemm_inputs = fp8, .moe_probs_in_activation = probs_in_activation};
  return sc::routed_activation_bytes(m, 2, 1, moe_act ? sc::RecomputeMode::Selective : sc::RecomputeMode::None, 1,
                                     1, modules, storage);
}

}  // namespace

// Per token: fp32 router probabilities 4 x 128 = 512; per routed copy (8): the experts' fc1
// input (2h; FP8: h), the output the combine weights (2h; none once the activation weights
// it), the SwiGLU gate and up (4 x 768) and their product, fc2's input (2 x 768; FP8: 768).
TEST(MoeActivationStorage, RoutedCopiesByHand) {
  const sm::ModelSpec m = qwen3_30b();
  // 16-bit, probabilities in the combine: 8192 x (512 + 8 x (4 x 2048 + 6 x 768)).
  EXPECT_EQ(routed(m, false, false), 8192.0 * (512 + 8 * 12800));
  // The activation weights the copies: 8192 x (512 + 8 x (2 x 2048 + 6 x 768)).
  EXPECT_EQ(routed(m, false, true), 8192.0 * (512 + 8 * 8704));
  // FP8 casts only: 8192 x (512 + 8 x (3 x 2048 + 5 x 768)).
  EXPECT_EQ(routed(m, true, false), 8192.0 * (512 + 8 * 9984));
  // Both, as Megatron-Bridge 25.09 runs it: 8192 x (512 + 8 x (2048 + 5 x 768)) = 390070272.
  EXPECT_EQ(routed(m, true, true), 390070272.0);
  // moe_act recompute discards the product (fc2 then saves that original, not its cast).
  EXPECT_EQ(routed(m, true, true, true), 8192.0 * (512 + 8 * (2048 + 4 * 768)));
  EXPECT_EQ(routed(m, false, false, true), 8192.0 * (512 + 8 * (4 * 2048 + 4 * 768)));
}

// The whole MoE layer under FP8: the routed part as above, the QKV input's cast (sbh instead of
// 2sbh); the router keeps its 16-bit input, and the attention output (the out-projection's
// input) stays 16-bit.
TEST(MoeActivationStorage, Fp8LayerKeepsTheRoutersInputAndTheAttentionOutput) {
  const sm::ModelSpec m = qwen3_30b();
  auto layer = [&](bool fp8) {
    const sc::ActivationStorage storage{.fp8_gemm_inputs = fp8, .moe_probs_in_activation = true};
    return sc::layer_activation_bytes(m, 2, 1, false, sc::RecomputeMode::None, sc::kFlashScoreBytes, 1, 1, {},
                                      storage);
  };
  const double sbh = 8192.0 * 2048;
  EXPECT_EQ(layer(false) - layer(true), sbh + (routed(m, false, true) - routed(m, true, true)));
}

// A dense layer under FP8: the QKV and fc1 inputs' casts (sbh each less), fc2's input cast (sbf
// less); with layernorm recompute the norms' outputs are gone either way and only fc2's differs.
TEST(MoeActivationStorage, Fp8DenseLayerByHand) {
  const sm::ModelSpec m = sm::load_model("llama3-8b");
  const double sb = static_cast<double>(m.seq_len), h = static_cast<double>(m.hidden),
               f = static_cast<double>(m.ffn);
  auto layer = [&](bool fp8, bool layernorm_recompute) {
    sc::RecomputeModules modules;
    modules.layernorm = layernorm_recompute;
    modules.core_attn = true;
    return sc::layer_activation_bytes(m, 1, 1, false, sc::RecomputeMode::Selective, sc::kFlashScoreBytes, 0, 1,
                                      modules, {.fp8_gemm_inputs = fp8});
  };
  EXPECT_EQ(layer(false, false) - layer(true, false), sb * (2 * h + f));
  EXPECT_EQ(layer(false, true) - layer(true, true), sb * f);
  EXPECT_EQ(layer(false, false) - layer(false, true), sb * 4 * h);
}

// The stacks that ran Megatron-Core r0.13 or later say so; the 2024 NeMo stack does not.
TEST(MoeActivationStorage, StacksSayWhereTheActivationWeightsTheCopies) {
  EXPECT_TRUE(sc::load_software_stack("nemo-2024-perf-deepep").moe_probs_in_activation);
  EXPECT_TRUE(sc::load_software_stack("mcore-2024-zoo").moe_probs_in_activation);
  EXPECT_TRUE(sc::load_software_stack("mcore-2024-deepep").moe_probs_in_activation);
  EXPECT_FALSE(sc::load_software_stack("nemo-2024-perf").moe_probs_in_activation);
  EXPECT_FALSE(sc::load_software_stack("mcore-2024").moe_probs_in_activation);
}
