// Memory per rank of a published MoE layout, by hand: DeepSeek-V3 as NeMo's pretraining
// recipe runs it on 1024 H100 80GB (NVIDIA/NeMo nemo/collections/llm/recipes/deepseek_v3.py
// at 00f65ddf, pretrain_recipe: 128 nodes x 8, tp 2, pp 16, ep 64, etp 1, no vpp, first
// stage 3 layers, last stage 2, micro batch 1, global batch 4096, seq 4096, MTP on,
// distributed optimizer, grad_reduce_in_fp32 False, selective recompute of mla_up_proj,
// layernorm, moe and mlp, DeepEP dispatch). dp = 1024 / (2 x 16) = 32; the experts fold
// over tp x dp = 64 ranks as ep 64, so edp = 1: expert optimizer state is not sharded.
#include <gtest/gtest.h>

#include "costmodel/memory_model.h"
#include "models/model_graph.h"
#include "models/model_spec.h"

namespace sc = strata::costmodel;
namespace sm = strata::models;

namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

sc::MemoryInputs nemo_deepseek_v3_layout() {
  sc::MemoryInputs in;
  in.tp = 2, in.pp = 16, in.dp = 32, in.ep = 64, in.etp = 1;
  in.micro_batch = 1;
  in.num_microbatches = 4096 / 32;  // global batch / (dp x micro batch)
  in.zero = 1;                       // Megatron's distributed optimizer
  in.sequence_parallel = true;       // Megatron-Core requires it for MoE with tp > 1
  in.attention_score_bytes = sc::kFlashScoreBytes;  // TE fused attention
  in.grad_buffer_bytes = 2;          // grad_reduce_in_fp32 False: a bf16 gradient buffer
  in.recompute = sc::RecomputeMode::Selective;
  in.recompute_modules.mla_up_proj = true;
  in.recompute_modules.layernorm = true;
  in.recompute_modules.moe = true;
  in.recompute_modules.mlp = true;
  // Layer groups: 0 = embedding, 1..61 = blocks, 62 = head (+ MTP). First stage 3 blocks,
  // last 2, the 56 others 4 per stage.
  in.stage_layers.push_back({0, 1, 2, 3});
  for (int p = 1; p <= 14; ++p) in.stage_layers.push_back({4 * p, 4 * p + 1, 4 * p + 2, 4 * p + 3});
  in.stage_layers.push_back({60, 61, 62});
  return in;
}

sc::DeviceProfile h100() {
  sc::DeviceProfile d;
  d.reserve_gib = 4;  // costmodel/hardware/h100-sxm-80gb.yaml
  return d;
}

TEST(MoeMemory, DeepSeekV3NemoLayoutMiddleStageByHand) {
  const sm::ModelGraph g = sm::ModelGraph::build(sm::load_model("deepseek-v3"), 1);
  const auto stages = sc::MemoryModel(g, h100()).per_stage(nemo_deepseek_v3_layout());
  const sc::StageMemory& m = stages[1];  // blocks 4..7, all MoE
  // One MoE block on one rank (tp 2, ep 64):
  //   replicated: q_down 7168 x 1536 = 11010048, kv_down 7168 x 576 = 4128768, latent norms
  //     1536 + 512, block norms 2 x 7168 = 14336, router 7168 x 256 = 1835008: 16990208;
  //   tp-sharded: q_up 1536 x 24576 = 37748736, kv_up 512 x 32768 = 16777216, out 16384 x 7168
  //     = 117440512, shared expert 3 x 7168 x 2048 = 44040192: 216006656 / 2 = 108003328;
  //   dense 124993536; experts 256 x 3 x 7168 x 2048 / 64 = 176160768.
  // 4 blocks: dense 499974144, experts 704643072, total 1204617216.
  EXPECT_EQ(m.params, 1204617216.0);
  EXPECT_EQ(m.expert_params, 704643072.0);
  // Weights bf16: 2 x 1204617216 = 2409234432.
  EXPECT_EQ(m.weights_bytes, 2409234432.0);
  // Gradients: the bf16 buffer 2 x 1204617216 = 2409234432. The optimizer step's fp32 copy of
  // its shard, 4 x (499974144 / 32 + 704643072 / 1) = 4 x 720267264 = 2881069056, lives only
  // in the memory the activations freed (less than they hold: nothing added).
  EXPECT_EQ(m.grads_bytes, 2409234432.0);
  EXPECT_EQ(m.step_grad_copy_bytes, 2881069056.0);
  EXPECT_EQ(m.step_extra_bytes, 0.0);
  // Optimizer (fp32 master, m, v): 12 x 720267264 = 8643207168.
  EXPECT_EQ(m.optimizer_bytes, 8643207168.0);
  // Of which the experts': weights 2 x 704643072 = 1409286144; gradients and optimizer
  // (2 + 12) x 704643072 = 9865003008 (edp = 1: nothing sharded).
  EXPECT_EQ(m.expert_weights_bytes, 1409286144.0);
  EXPECT_EQ(m.expert_grads_optimizer_bytes, 9865003008.0);
  // Activations per MoE block (s 4096, b 1, h 7168, sbh = 29360128, t 2 with SP):
  //   replicated: 10 sbh less the norm outputs 4 sbh (layernorm recompute) = 6 sbh =
  //     176160768, latents 2 x 4096 x (1536 + 512 + 64) = 17301504: 193462272;
  //   sharded: Q, K, V dropped (mla_up_proj), out-proj input 2 x 4096 x 16384 = 134217728;
  //   the MoE MLP (router probabilities, routed copies, shared expert) dropped (moe);
  //   scores 0 (fused attention). (193462272 + 134217728) / 2 = 163840000.
  // 4 blocks x 15 micro-batches in flight (1F1B: pp - 1) = 9830400000.
  EXPECT_EQ(m.activations_bytes, 9830400000.0);
  EXPECT_EQ(m.dispatch_activations_bytes, 0.0);
  EXPECT_EQ(m.logits_bytes, 0.0);
  // Total with the 4 GiB reserve: 27587043328 bytes (25.7 GiB): fits 80 GB.
  EXPECT_EQ(m.total_bytes, 27587043328.0);
}

TEST(MoeMemory, DeepSeekV3NemoLayoutFitsOnEveryStageOnlyWithItsRecompute) {
  const sm::ModelGraph g = sm::ModelGraph::build(sm::load_model("deepseek-v3"), 1);
  const sc::MemoryModel model(g, h100());
  sc::MemoryInputs in = nemo_deepseek_v3_layout();
  for (const sc::StageMemory& m : model.per_stage(in)) EXPECT_LT(m.total_bytes, 80 * kBytesPerGiB);
  // The last stage carries the MTP depth: per micro-batch 12 sbh / 2 = 176160768 (enorm,
  // hnorm, eh_proj input, its final-norm and head inputs) + one block 163840000, 1 in
  // flight, and its fp32 logits 4 x 4096 x 129280 / 2 = 1059061760: 1399062528.
  const sc::StageMemory last = model.per_stage(in).back();
  EXPECT_EQ(last.mtp_activations_bytes, 1399062528.0);
  EXPECT_EQ(last.logits_bytes, 2 * 1059061760.0);  // the main loss's and the MTP depth's
  // With only strata's plain selective recompute (scores), the routed copies stay: per MoE
  // block (4096 / 2) x (4 x 256 + 8 x (4 x 7168 + 6 x 2048)) = 673185792 bytes of dispatch
  // buffers and expert activations, x 4 blocks x 15 in flight = 40391147520 on stage 1,
  // which no longer fits.
  in.recompute_modules = {};
  const sc::StageMemory plain = model.per_stage(in)[1];
  EXPECT_EQ(plain.dispatch_activations_bytes, 40391147520.0);
  EXPECT_GT(plain.total_bytes, 80 * kBytesPerGiB);
}

}  // namespace
