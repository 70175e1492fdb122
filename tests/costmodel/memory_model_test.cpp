// Memory model against Korthikanti et al. 2022 computed by hand, and invariants.
#include "costmodel/memory_model.h"

#include <algorithm>
#include <numeric>

#include <gtest/gtest.h>

#include "common/errors.h"
#include "models/model_graph.h"
#include "models/model_spec.h"
#include "test_profiles.h"

namespace sc = strata::costmodel;
namespace sm = strata::models;
using sc::RecomputeMode;

namespace {

sm::ModelSpec gpt3_175b() {
  sm::ModelSpec m;
  m.name = "gpt3-175b";
  m.layers = 96, m.hidden = 12288, m.heads = 96, m.kv_heads = 96, m.ffn = 4 * 12288;
  m.vocab = 51200, m.seq_len = 2048;
  m.activation = sm::Activation::Gelu, m.norm = sm::Norm::LayerNorm;
  m.positions = sm::Positions::Learned, m.tied_embeddings = true;
  return m;
}

sm::ModelSpec small_gpt() {
  sm::ModelSpec m = gpt3_175b();
  m.name = "small";
  m.layers = 8, m.hidden = 512, m.heads = 8, m.kv_heads = 8, m.ffn = 2048;
  m.vocab = 1024, m.seq_len = 256;
  return m;
}

}  // namespace

TEST(LayerActivation, MatchesKorthikantiTable2ForGpt3) {
  const auto m = gpt3_175b();
  const double s = 2048, b = 1, h = 12288, a = 96, sbh = s * b * h;
  // No parallelism: sbh(34 + 5as/h).
  EXPECT_NEAR(sc::layer_activation_bytes(m, 1, 1, false, RecomputeMode::None),
              sbh * (34 + 5 * a * s / h), 1.0);
  for (int t : {2, 4, 8}) {
    // Tensor parallel: sbh(10 + 24/t + 5as/(ht)).
    EXPECT_NEAR(sc::layer_activation_bytes(m, 1, t, false, RecomputeMode::None),
                sbh * (10 + 24.0 / t + 5 * a * s / (h * t)), 1.0);
    // + sequence parallel: sbh(34/t + 5as/(ht)).
    EXPECT_NEAR(sc::layer_activation_bytes(m, 1, t, true, RecomputeMode::None),
                sbh * (34.0 / t + 5 * a * s / (h * t)), 1.0);
    // + selective recompute: sbh * 34/t.
    EXPECT_NEAR(sc::layer_activation_bytes(m, 1, t, true, RecomputeMode::Selective), sbh * 34 / t, 1.0);
    EXPECT_NEAR(sc::layer_activation_bytes(m, 1, t, false, RecomputeMode::Selective),
                sbh * (10 + 24.0 / t), 1.0);
    // Full recompute: 2sbh, /t with SP.
    EXPECT_NEAR(sc::layer_activation_bytes(m, 1, t, false, RecomputeMode::Full), 2 * sbh, 1.0);
    EXPECT_NEAR(sc::layer_activation_bytes(m, 1, t, true, RecomputeMode::Full), 2 * sbh / t, 1.0);
  }
  // Linear in the micro-batch.
  EXPECT_NEAR(sc::layer_activation_bytes(m, 4, 8, true, RecomputeMode::Selective), 4 * sbh * 34 / 8, 4.0);
}

// TorchTitan's per-op policy keeps, per token of a Llama 3 8B block (h 4096, 32 heads of 128,
// 8 K/V heads, ffn 14336), in bf16: the block input and the w2 output (2 x 2 x 4096), the wq
// output and the attention output (2 x 2 x 4096), the wv output (2 x 1024), the w1 output
// (2 x 14336) and the fp32 log-sum-exp of 32 heads (4 x 32): 63,616 B; on tp 2 with SP all
// of it is split, without SP only the tp-sharded part.
TEST(LayerActivation, TorchTitanPerOpPolicyKeepsTheSavedMmOutputs) {
  sm::ModelSpec m = gpt3_175b();
  m.hidden = 4096, m.heads = 32, m.kv_heads = 8, m.ffn = 14336, m.seq_len = 8192;
  m.activation = sm::Activation::SwiGlu, m.norm = sm::Norm::RmsNorm, m.positions = sm::Positions::Rope;
  sc::RecomputeModules per_op;
  per_op.per_op = true;
  const double tokens = 2 * 8192.0;
  EXPECT_NEAR(sc::layer_activation_bytes(m, 2, 1, false, RecomputeMode::Selective, 0, 1, 1, per_op), tokens * 63616, 1.0);
  EXPECT_NEAR(sc::layer_activation_bytes(m, 2, 2, true, RecomputeMode::Selective, 0, 1, 1, per_op), tokens * 63616 / 2, 1.0);
  EXPECT_NEAR(sc::layer_activation_bytes(m, 2, 2, false, RecomputeMode::Selective, 0, 1, 1, per_op),
              tokens * (16384 + (63616 - 16384) / 2.0), 1.0);
  // Under full recompute the modules do not matter.
  EXPECT_NEAR(sc::layer_activation_bytes(m, 2, 1, false, RecomputeMode::Full, 0, 1, 1, per_op), tokens * 2 * 4096, 1.0);
}

TEST(LayerActivation, AgreesWithTheModelGraphTerms) {
  // The model graph sums per-op Korthikanti terms; the memory model uses the closed
  // form: two different paths must agree for GPT and Llama blocks.
  // Qwen3-style per-head Q and K norms keep their inputs too.
  for (int kind : {0, 1, 2}) {
    sm::ModelSpec m = small_gpt();
    if (kind > 0) {
      m.activation = sm::Activation::SwiGlu, m.norm = sm::Norm::RmsNorm;
      m.positions = sm::Positions::Rope, m.kv_heads = 2, m.ffn = 1376, m.tied_embeddings = false;
    }
    m.qk_norm = kind == 2;
    auto g = sm::ModelGraph::build(m, 2);
    EXPECT_NEAR(sc::layer_activation_bytes(m, 2, 1, false, RecomputeMode::None),
                g.groups()[1].activation_bytes, 1e-6 * g.groups()[1].activation_bytes)
        << kind;
  }
}

// The Q and K norms' saved inputs by hand: 2 bytes x tokens x (q + k), split over tp.
TEST(LayerActivation, QkNormsKeepTheirInputsSplitOverTp) {
  sm::ModelSpec m = gpt3_175b();
  m.hidden = 4096, m.heads = 32, m.kv_heads = 8, m.ffn = 14336, m.seq_len = 4096;
  m.activation = sm::Activation::SwiGlu, m.norm = sm::Norm::RmsNorm, m.positions = sm::Positions::Rope;
  sm::ModelSpec qk = m;
  qk.qk_norm = true;
  const double tokens = 4096.0;
  EXPECT_NEAR(sc::layer_activation_bytes(qk, 1, 2, false, RecomputeMode::None) -
                  sc::layer_activation_bytes(m, 1, 2, false, RecomputeMode::None),
              2 * tokens * (4096 + 1024) / 2, 1.0);
  EXPECT_NEAR(sc::layer_activation_bytes(qk, 1, 2, false, RecomputeMode::Full),
              sc::layer_activation_bytes(m, 1, 2, false, RecomputeMode::Full), 1e-9);
}

// Full recompute keeps each layer's input (2sbh) and, in the backward, rebuilds one layer at a
// time: that layer's whole activations come on top, once per rank. On the head's rank the loss's
// peak is freed before the first re-run, so only what the layer needs beyond the logits adds.
TEST(MemoryModel, FullRecomputeHoldsOneRerunLayerBesideTheStoredInputs) {
  auto spec = small_gpt();
  auto graph = sm::ModelGraph::build(spec, 1);
  sc::MemoryModel mm(graph, sc::testing::toy_device());
  sc::MemoryInputs in;
  in.pp = 2;
  in.num_microbatches = 8;
  in.recompute = RecomputeMode::Full;
  in.stage_layers = {{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}};  // 4 blocks each; head on stage 1
  const auto st = mm.per_stage(in);
  const double sbh = 256.0 * 512;
  const double whole = sc::layer_activation_bytes(spec, 1, 1, false, RecomputeMode::None);
  EXPECT_DOUBLE_EQ(st[0].recompute_layer_bytes, whole);
  EXPECT_DOUBLE_EQ(st[1].recompute_layer_bytes, whole);
  // Stage 0: 2 micro-batches in flight x (4 layer inputs 2sbh + the embedding mask sbh), + the layer.
  EXPECT_DOUBLE_EQ(st[0].activations_bytes, 2 * (4 * 2 * sbh + sbh) + whole);
  // Stage 1: 1 in flight x (4 layer inputs + the final norm and LM-head inputs 4sbh), + what the
  // layer needs beyond the fp32 logits (4 x 256 x 1024 bytes, freed before the re-run).
  EXPECT_DOUBLE_EQ(st[1].logits_bytes, 4.0 * 256 * 1024);
  ASSERT_GT(whole, st[1].logits_bytes);
  EXPECT_DOUBLE_EQ(st[1].activations_bytes, 4 * 2 * sbh + 4 * sbh + whole - st[1].logits_bytes);
  // A loss that holds more than the layer: nothing adds on the head's rank.
  in.loss_bytes_per_logit = 32;
  ASSERT_LT(whole, mm.per_stage(in)[1].logits_bytes);
  EXPECT_DOUBLE_EQ(mm.per_stage(in)[1].activations_bytes, 4 * 2 * sbh + 4 * sbh);
  in.loss_bytes_per_logit = 4;
  // Without full recompute nothing is re-run.
  in.recompute = RecomputeMode::None;
  EXPECT_EQ(mm.per_stage(in)[0].recompute_layer_bytes, 0.0);
}

TEST(MemoryModel, WeightsGradsOptimizerAre18BytesPerParamAndZeroShardsThem) {
  auto spec = small_gpt();
  auto graph = sm::ModelGraph::build(spec, 1);
  sc::MemoryModel mm(graph, sc::testing::toy_device());
  sc::MemoryInputs in;
  in.dp = 4;
  auto z0 = mm.per_stage(in);
  ASSERT_EQ(z0.size(), 1u);
  // One stage, tp = 1: every parameter once (tied LM head shares the embedding).
  EXPECT_NEAR(z0[0].params, graph.total_params(), 1e-6 * graph.total_params());
  EXPECT_DOUBLE_EQ(z0[0].weights_bytes, 2 * z0[0].params);
  EXPECT_DOUBLE_EQ(z0[0].grads_bytes, 4 * z0[0].params);
  EXPECT_DOUBLE_EQ(z0[0].optimizer_bytes, 12 * z0[0].params);
  in.zero = 1;
  auto z1 = mm.per_stage(in);
  EXPECT_DOUBLE_EQ(z1[0].optimizer_bytes, z0[0].optimizer_bytes / 4);
  EXPECT_DOUBLE_EQ(z1[0].weights_bytes, z0[0].weights_bytes);
  EXPECT_DOUBLE_EQ(z1[0].grads_bytes, z0[0].grads_bytes);
  EXPECT_DOUBLE_EQ(z0[0].total_bytes - z1[0].total_bytes, 12 * z0[0].params * (1 - 1.0 / 4));
}

// A 16-bit gradient reduction (grad_reduce_in_fp32 off; fp16 grads in Megatron 2021) keeps a
// 2-byte gradient buffer, and the mixed-precision optimizer makes an fp32 copy of the
// gradients it steps: without ZeRO 4 bytes per parameter, with the distributed optimizer over
// dp = 4 ranks 4/4. The copy lives only through the optimizer step, in the memory the
// activations and logits freed: the total adds only what it needs beyond them.
TEST(MemoryModel, GradientBufferFollowsTheReductionDtype) {
  auto spec = small_gpt();
  auto graph = sm::ModelGraph::build(spec, 1);
  sc::MemoryModel mm(graph, sc::testing::toy_device());
  sc::MemoryInputs in;
  in.dp = 4;
  in.grad_buffer_bytes = 2;
  auto parts = [](const sc::StageMemory& m) {
    return m.weights_bytes + m.grads_bytes + m.optimizer_bytes + m.activations_bytes + m.logits_bytes +
           m.reserve_bytes;
  };
  auto z0 = mm.per_stage(in);
  const double P = z0[0].params;
  EXPECT_DOUBLE_EQ(z0[0].grads_bytes, 2 * P);
  EXPECT_DOUBLE_EQ(z0[0].step_grad_copy_bytes, 4 * P);
  EXPECT_DOUBLE_EQ(z0[0].weights_bytes + z0[0].optimizer_bytes, 14 * P);
  // This toy model's one micro-batch holds less than the copy: the peak is the step's.
  ASSERT_GT(4 * P, z0[0].activations_bytes + z0[0].logits_bytes);
  EXPECT_DOUBLE_EQ(z0[0].step_extra_bytes, 4 * P - z0[0].activations_bytes - z0[0].logits_bytes);
  EXPECT_DOUBLE_EQ(z0[0].total_bytes, parts(z0[0]) + z0[0].step_extra_bytes);
  // Eight times the micro-batch holds more than the copy: the peak is the backward's.
  in.micro_batch = 8;
  const auto big = mm.per_stage(in)[0];
  ASSERT_LT(big.step_grad_copy_bytes, big.activations_bytes + big.logits_bytes);
  EXPECT_EQ(big.step_extra_bytes, 0.0);
  EXPECT_DOUBLE_EQ(big.total_bytes, parts(big));
  in.micro_batch = 1;
  in.zero = 1;
  auto z1 = mm.per_stage(in);
  EXPECT_DOUBLE_EQ(z1[0].grads_bytes, 2 * P);
  EXPECT_DOUBLE_EQ(z1[0].step_grad_copy_bytes, 4 * P / 4);
  // ZeRO-2: the buffer and the fp32 copy are both shards; plus one layer group's whole
  // gradient in the buffer's dtype (half of what an fp32 buffer holds for it).
  in.zero = 2;
  const auto z2 = mm.per_stage(in)[0];
  in.grad_buffer_bytes = 4;
  const auto z2_fp32 = mm.per_stage(in)[0];
  EXPECT_EQ(z2_fp32.step_grad_copy_bytes, 0.0);
  const double largest_group = (z2_fp32.grads_bytes - 4 * P / 4) / 4;  // what the fp32 case adds
  EXPECT_GT(largest_group, 0);
  EXPECT_NEAR(z2.grads_bytes, 2 * P / 4 + 2 * largest_group, 1e-9 * P);
  EXPECT_DOUBLE_EQ(z2.step_grad_copy_bytes, 4 * P / 4);
}

// Up to ZeRO-2 every stage can only shard more. ZeRO-3 also holds two gathered layer
// groups, which on a stage of few layers with a small dp can outweigh what it shards (see
// ZeroThreeByHand).
TEST(MemoryModel, ZeroThreeByHand) {
  auto spec = small_gpt();  // h 512, ffn 2048, 8 layers, learned positions, biases
  auto graph = sm::ModelGraph::build(spec, 1);
  sc::MemoryModel mm(graph, sc::testing::toy_device());
  sc::MemoryInputs in;
  in.tp = 1, in.pp = 4, in.dp = 8;
  auto z2 = mm.per_stage((in.zero = 2, in));
  auto z3 = mm.per_stage((in.zero = 3, in));
  // A block: QKV 512 x 1536 + 1536, out 512 x 512 + 512, MLP 512 x 2048 + 2048 and
  // 2048 x 512 + 512, two LayerNorms 2 x 1024: 3,152,384 parameters.
  const double block = 512.0 * 1536 + 1536 + 512.0 * 512 + 512 + 512.0 * 2048 + 2048 +
                       2048.0 * 512 + 512 + 2 * 1024;
  EXPECT_DOUBLE_EQ(block, 3152384.0);
  // Stage 1 holds blocks 3 and 4 (even split): 2 blocks.
  EXPECT_DOUBLE_EQ(z3[1].params, 2 * block);
  EXPECT_DOUBLE_EQ(z2[1].weights_bytes, 2 * 2 * block);          // 12,609,536 B
  EXPECT_DOUBLE_EQ(z3[1].weights_bytes, 2 * 2 * block / 8 + 2 * 2 * block);  // shard + 2 gathered
  EXPECT_DOUBLE_EQ(z3[1].grads_bytes, 4 * 2 * block / 8 + 4 * block);  // shard + one block's whole gradient
  EXPECT_DOUBLE_EQ(z2[1].grads_bytes, z3[1].grads_bytes);
  EXPECT_DOUBLE_EQ(z3[1].optimizer_bytes, 12 * 2 * block / 8);
  // 18 bytes per parameter / 8 + 2 x 2 bytes x the largest group (one block) gathered
  // + 4 bytes x that block's gradient:
  EXPECT_DOUBLE_EQ(z3[1].weights_bytes + z3[1].grads_bytes + z3[1].optimizer_bytes,
                   18.0 * 2 * 3152384 / 8 + 8.0 * 3152384);
  // FSDP2 mixed precision: the shards are the optimizer's fp32 weights, no 16-bit shard beside
  // them; the two gathered bf16 groups stay, the rest is unchanged (16 bytes per parameter / 8).
  in.sharded_params_fp32 = true;
  const auto fsdp2 = mm.per_stage(in)[1];
  EXPECT_DOUBLE_EQ(fsdp2.weights_bytes, 2 * 2 * block);
  EXPECT_DOUBLE_EQ(fsdp2.optimizer_bytes, z3[1].optimizer_bytes);
  EXPECT_DOUBLE_EQ(z3[1].total_bytes - fsdp2.total_bytes, 2 * 2 * block / 8);
  in.zero = 2;  // only ZeRO-3 shards the parameters
  EXPECT_DOUBLE_EQ(mm.per_stage(in)[1].weights_bytes, z2[1].weights_bytes);
  in.zero = 3, in.sharded_params_fp32 = false;
  // dp 1: nothing to gather, ZeRO-3 is the plain layout.
  in.dp = 1;
  EXPECT_DOUBLE_EQ(mm.per_stage(in)[1].weights_bytes, 2 * 2 * block);
}

TEST(MemoryModel, MemoryIsNonIncreasingInTheZeroStage) {
  auto graph = sm::ModelGraph::build(small_gpt(), 2);
  sc::MemoryModel mm(graph, sc::testing::toy_device());
  for (int dp : {1, 2, 8})
    for (int tp : {1, 2, 4})
      for (int pp : {1, 2, 4})
        for (auto rc : {RecomputeMode::None, RecomputeMode::Selective, RecomputeMode::Full}) {
          sc::MemoryInputs in;
          in.dp = dp, in.tp = tp, in.pp = pp, in.recompute = rc, in.micro_batch = 2;
          in.sequence_parallel = tp > 1;
          std::vector<double> prev;
          for (int z = 0; z <= 2; ++z) {
            in.zero = z;
            auto st = mm.per_stage(in);
            for (std::size_t p = 0; p < st.size(); ++p) {
              if (!prev.empty()) { EXPECT_LE(st[p].total_bytes, prev[p]) << "zero " << z; }
              if (dp == 1 && !prev.empty()) { EXPECT_DOUBLE_EQ(st[p].total_bytes, prev[p]); }
            }
            prev.clear();
            for (auto& s : st) prev.push_back(s.total_bytes);
          }
        }
}

TEST(MemoryModel, OneFOneBActivationsFollowInFlightMicrobatches) {
  auto spec = small_gpt();  // 8 layers
  auto graph = sm::ModelGraph::build(spec, 1);
  auto dev = sc::testing::toy_device();
  sc::MemoryModel mm(graph, dev);
  sc::MemoryInputs in;
  in.tp = 2, in.pp = 4, in.dp = 1, in.micro_batch = 1, in.sequence_parallel = true;
  in.recompute = RecomputeMode::Selective;
  auto st = mm.per_stage(in);
  ASSERT_EQ(st.size(), 4u);
  const double s = 256, b = 1, h = 512, t = 2, sbh = s * b * h, V = 1024;
  const double layer = sbh * 34 / t;  // Korthikanti, SP + selective
  // Even split: 2 layers per stage; stage p holds pp - p micro-batches (1F1B).
  EXPECT_NEAR(st[0].activations_bytes, 4 * (2 * layer + sbh / t), 1e-6);  // + embedding dropout mask
  EXPECT_NEAR(st[1].activations_bytes, 3 * 2 * layer, 1e-6);
  EXPECT_NEAR(st[2].activations_bytes, 2 * 2 * layer, 1e-6);
  EXPECT_NEAR(st[3].activations_bytes, 1 * (2 * layer + 4 * sbh / t), 1e-6);  // + final norm, LM head inputs
  // Logits (fp32, vocab-parallel) only on the last stage.
  EXPECT_DOUBLE_EQ(st[3].logits_bytes, 4 * b * s * V / t);
  EXPECT_EQ(st[0].logits_bytes, 0);
  // Reserve from the profile; total is the sum.
  for (const auto& m : st) {
    EXPECT_DOUBLE_EQ(m.reserve_bytes, 2.0 * 1024 * 1024 * 1024);
    EXPECT_DOUBLE_EQ(m.total_bytes, m.weights_bytes + m.grads_bytes + m.optimizer_bytes +
                                        m.activations_bytes + m.logits_bytes + m.reserve_bytes);
  }
  // The tied LM head keeps a copy of the embedding (vocab-parallel) on the last stage.
  double block = graph.groups()[1].params;
  EXPECT_GT(st[3].params, st[1].params + V * h / t * 0.99);
  EXPECT_GT(block, 0);
  // Explicit in-flight counts (e.g. GPipe holds every micro-batch) and stage layers.
  in.in_flight = {8, 8, 8, 8};
  in.stage_layers = {{0, 1, 2, 3}, {4, 5}, {6, 7}, {8, 9}};
  auto gp = mm.per_stage(in);
  EXPECT_NEAR(gp[0].activations_bytes, 8 * (3 * layer + sbh / t), 1e-6);
  EXPECT_NEAR(gp[1].activations_bytes, 8 * 2 * layer, 1e-6);
  EXPECT_DOUBLE_EQ(gp[3].logits_bytes, 8 * 4 * b * s * V / t);
}

// Context parallel: each rank holds s/cp tokens of every activation and of the logits;
// weights stay whole; ZeRO shards over the dp x cp ranks. By hand on the small GPT.
TEST(MemoryModel, ContextParallelDividesActivationsAndShardsZeroOverDpTimesCp) {
  auto spec = small_gpt();  // 8 layers, s 256, h 512, 8 heads, V 1024
  auto graph = sm::ModelGraph::build(spec, 1);
  sc::MemoryModel mm(graph, sc::testing::toy_device());
  sc::MemoryInputs in;
  in.tp = 2, in.pp = 4, in.dp = 2, in.cp = 4, in.sequence_parallel = true;
  in.recompute = RecomputeMode::Selective;
  in.attention_score_bytes = sc::kFlashScoreBytes;
  in.zero = 1;
  auto st = mm.per_stage(in);
  const double s = 256, b = 1, h = 512, t = 2, cp = 4, sbh = s * b * h, V = 1024;
  const double layer = sbh * 34 / t;  // Korthikanti, SP + selective, whole sequence
  // Stage 1: 2 layers, 3 micro-batches in flight (1F1B), a quarter of the tokens each.
  EXPECT_NEAR(st[1].activations_bytes, 3 * 2 * layer / cp, 1e-6);
  EXPECT_NEAR(st[1].activations_bytes, 3 * 2 * 256 * 512 * 17 / 4.0, 1e-6);  // 3,342,336 B
  EXPECT_DOUBLE_EQ(st[3].logits_bytes, 4 * b * s * V / t / cp);               // 131,072 B
  EXPECT_DOUBLE_EQ(st[3].logits_bytes, 131072.0);
  // Weights and gradients are not split by cp; the optimizer state is split over 2 x 4.
  EXPECT_DOUBLE_EQ(st[1].weights_bytes, 2 * st[1].params);
  EXPECT_DOUBLE_EQ(st[1].grads_bytes, 4 * st[1].params);
  EXPECT_DOUBLE_EQ(st[1].optimizer_bytes, 12 * st[1].params / 8);
  in.zero = 3;
  st = mm.per_stage(in);
  // The shard, plus two gathered blocks (stage 1 holds two equal blocks: one is params / 2).
  EXPECT_DOUBLE_EQ(st[1].weights_bytes, 2 * st[1].params / 8 + 2 * 2 * (st[1].params / 2));
  EXPECT_DOUBLE_EQ(st[1].grads_bytes, 4 * st[1].params / 8 + 4 * (st[1].params / 2));
  in.cp = 0;
  EXPECT_THROW(mm.per_stage(in), strata::InputError);
}

TEST(MemoryModel, InterleavedDefaultsFollowMegatronWarmup) {
  auto graph = sm::ModelGraph::build(small_gpt(), 1);
  sc::MemoryModel mm(graph, sc::testing::toy_device());
  sc::MemoryInputs in;
  in.pp = 2, in.vpp = 2, in.recompute = RecomputeMode::Full;
  auto st = mm.per_stage(in);
  const double sbh = 256.0 * 512, layer = 2 * sbh;
  // Beside the stored inputs, the layer full recompute re-runs (beyond the logits on rank 1).
  const auto rerun = [](const sc::StageMemory& m) { return std::max(0.0, m.recompute_layer_bytes - m.logits_bytes); };
  // Rank 0 holds chunks 0 and 2 (2 layers each + embedding mask): in flight
  // 2(pp-1) + (vpp-1)pp + 1 = 5 chunk-forwards of the mean chunk.
  EXPECT_NEAR(st[0].activations_bytes - rerun(st[0]), 5 * (4 * layer + sbh) / 2, 1e-6);
  // Rank 1: (vpp-1)pp + 1 = 3.
  EXPECT_NEAR(st[1].activations_bytes - rerun(st[1]), 3 * (4 * layer + 4 * sbh) / 2, 1e-6);
  in.num_microbatches = 1;  // capped at microbatches * vpp = 2
  const auto capped = mm.per_stage(in)[0];
  EXPECT_NEAR(capped.activations_bytes - rerun(capped), 2 * (4 * layer + sbh) / 2, 1e-6);
}

TEST(MemoryModel, RejectsInconsistentInputs) {
  auto graph = sm::ModelGraph::build(small_gpt(), 1);
  sc::MemoryModel mm(graph, sc::testing::toy_device());
  sc::MemoryInputs in;
  in.pp = 2;
  in.stage_layers = {{0, 1, 2, 3, 4}, {5, 6, 7, 8}};  // misses group 9
  EXPECT_THROW(mm.per_stage(in), strata::InputError);
  in.stage_layers = {{0, 1, 2, 3, 4}, {4, 5, 6, 7, 8, 9}};
  EXPECT_THROW(mm.per_stage(in), strata::InputError);
  in.stage_layers = {};
  in.zero = 4;
  EXPECT_THROW(mm.per_stage(in), strata::InputError);
  in.zero = 0;
  in.in_flight = {1};
  EXPECT_THROW(mm.per_stage(in), strata::InputError);
  EXPECT_EQ(sc::recompute_from_string("selective"), RecomputeMode::Selective);
  EXPECT_THROW(sc::recompute_from_string("partial"), strata::InputError);
}

TEST(MemoryModel, Fp8WeightCopiesByHand) {
  auto spec = small_gpt();  // h 512, ffn 2048, 8 layers
  auto graph = sm::ModelGraph::build(spec, 1);
  sc::MemoryModel mm(graph, sc::testing::toy_device());
  sc::MemoryInputs in;
  in.tp = 2, in.pp = 4, in.dp = 8;
  const auto bf16 = mm.per_stage(in);
  in.fp8_weights = true;
  const auto fp8 = mm.per_stage(in);
  // FP8-run weights of a block: QKV 512 x 1536, out 512 x 512, MLP 512 x 2048 and
  // 2048 x 512 = 3,145,728 (biases, norms, embedding and LM head stay bf16). Every stage
  // holds 2 blocks; an FP8 copy and its transpose, 2 bytes per weight, / tp 2.
  const double fp8_block = 512.0 * 1536 + 512.0 * 512 + 512.0 * 2048 + 2048.0 * 512;
  EXPECT_DOUBLE_EQ(fp8_block, 3145728.0);
  for (int p = 0; p < 4; ++p) {
    EXPECT_DOUBLE_EQ(fp8[p].weights_bytes - bf16[p].weights_bytes, 2.0 * 2 * fp8_block / 2) << p;
    EXPECT_DOUBLE_EQ(fp8[p].grads_bytes, bf16[p].grads_bytes);
    EXPECT_DOUBLE_EQ(fp8[p].optimizer_bytes, bf16[p].optimizer_bytes);
    EXPECT_DOUBLE_EQ(fp8[p].activations_bytes, bf16[p].activations_bytes);
    EXPECT_DOUBLE_EQ(fp8[p].total_bytes - bf16[p].total_bytes, 6291456.0) << p;
  }
  // ZeRO-3 shards the copies over dp 8 like the weights.
  in.zero = 3;
  const double z3_fp8 = mm.per_stage(in)[1].weights_bytes;
  in.fp8_weights = false;
  EXPECT_DOUBLE_EQ(z3_fp8 - mm.per_stage(in)[1].weights_bytes, 6291456.0 / 8);
}

// The planner's ZeRO memory for the tiny GPT that the CPU runtime trains, in the values the
// runtime counts (tests/integration/runtime_memory_test.cpp has the same hand numbers for
// `strata train`): P = 18432 (wte 256 x 64 + wpe 32 x 64) + 4 blocks x 49984 + 128 (final
// norm) = 218496; a block is the largest layer group. Weights are 2 bytes, gradients 4,
// optimizer state 12 here; the runtime keeps fp32 (4, 4 and two 4-byte moments).
TEST(MemoryModel, TinyGptZeroShardsAsTheRuntimeCounts) {
  auto graph = sm::ModelGraph::build(sm::load_model("tiny"), 1);
  sc::MemoryModel mm(graph, sc::testing::toy_device());
  const double P = 218496, block = 49984;
  for (int dp : {2, 4}) {
    sc::MemoryInputs in;
    in.dp = dp;
    for (int zero : {0, 1, 2, 3}) {
      in.zero = zero;
      const auto m = mm.per_stage(in)[0];
      EXPECT_DOUBLE_EQ(m.params, P);
      EXPECT_DOUBLE_EQ(m.weights_bytes / 2, zero == 3 ? P / dp + 2 * block : P) << zero;
      // ZeRO-2/3: the shard and one block's whole gradient before its reduce-scatter.
      EXPECT_DOUBLE_EQ(m.grads_bytes / 4, zero >= 2 ? P / dp + block : P) << zero;
      EXPECT_DOUBLE_EQ(m.optimizer_bytes / 12, zero >= 1 ? P / dp : P) << zero;
    }
  }
}
