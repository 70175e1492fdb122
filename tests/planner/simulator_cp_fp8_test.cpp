// Context parallel and FP8 in the simulator end to end (split from simulator_test.cpp).
#include "planner/simulator.h"
#include "common/json_text.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "costmodel/block_table.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/collective_cost.h"
#include "models/model_graph.h"
#include "models/model_spec.h"
#include "planner/detail/pipeline_walk.h"
#include "planner/plan_recompute.h"
#include "planner/schedule.h"
#include "planner/stack_support.h"
#include "tests/tables_only_cluster.h"
#include "tests/planner/simulator_fixtures.h"

namespace strata::planner {
namespace {

// ---- The simulator end to end ---------------------------------------------------------

using namespace test_fixtures;

costmodel::ClusterSpec flops_only_cluster() {
  costmodel::ClusterSpec c = free_comm_cluster();
  c.device.gemm_table.clear();
  c.device.collective_table.clear();
  c.device.op_table.clear();
  c.device.block_table.clear();
  return c;
}

costmodel::SoftwareStack flash_stack_without_overheads() {
  auto st = costmodel::load_software_stack("mcore-2024");
  st.kernel_overhead_us = 0;
  return st;
}

// Each of the cp ranks runs every op on s/cp tokens and 1/cp of the whole sequence's
// causal attention (load-balanced chunks): with everything linear in FLOPs, one rank's
// compute per iteration is exactly 1/cp of the cp = 1 rank's, and the model FLOPs per GPU
// per second stay the same. Charging the attention as (s/cp)^2 would make it 1/cp^2.
TEST(Simulator, ContextParallelSplitsEveryOpsWorkIncludingTheCausalAttention) {
  auto model = synthetic_model();
  model.seq_len = 4096;  // attention is a large part of the work
  const auto cluster = flops_only_cluster();
  const auto stack = flash_stack_without_overheads();
  SimulateOptions o;
  o.stack = &stack;
  const auto one = simulate(model, cluster, strategy(1, 1, 1, 1, 4), o).prediction;
  ASSERT_GT(one.breakdown_s.compute, 0);
  for (int cp : {2, 4}) {
    Strategy s = strategy(1, 1, 1, 1, 4);
    s.cp = cp;
    const auto p = simulate(model, cluster, s, o).prediction;
    EXPECT_NEAR(p.breakdown_s.compute, one.breakdown_s.compute / cp, 1e-6 * one.breakdown_s.compute)
        << "cp " << cp;
    EXPECT_NEAR(p.model_tflops_per_gpu, one.model_tflops_per_gpu, 1e-3 * one.model_tflops_per_gpu);
    EXPECT_NEAR(p.tokens_per_s, one.tokens_per_s * cp, 1e-3 * one.tokens_per_s * cp);
  }
}

// The all-gather exchange is exposed whole: per layer and micro-batch one all-gather of
// K/V forward, an all-gather and a reduce-scatter backward, on the CP group.
TEST(Simulator, AllGatherContextParallelChargesItsExchangeAsCpComm) {
  auto model = synthetic_model();  // 8 layers, h 1024, 16 heads
  model.seq_len = 4096;
  const auto cluster = strata::testing::tables_only_cluster("dgx-a100");
  auto stack = costmodel::load_software_stack("mcore-2024");
  stack.cp_comm = costmodel::CpCommType::AllGather;
  SimulateOptions o;
  o.stack = &stack;
  Strategy s = strategy(1, 2, 1, 1, 4);  // tp 2, cp 4: one CP group of 4 ranks in a node
  s.cp = 4;
  const auto p = simulate(model, cluster, s, o).prediction;
  // K/V per rank: 2 x 1 x (4096 / 4) x (1024 / 2) x 2 B = 2 MiB; the gathered buffer 8 MiB.
  const double gathered = 4 * 2.0 * 1024 * 512 * 2;
  const costmodel::CollectiveCost coll(cluster);
  const costmodel::PlacedGroup cp4{4, 1, 4};
  const double ag = coll.time_s(costmodel::Collective::AllGather, gathered, cp4);
  const double rs = coll.time_s(costmodel::Collective::ReduceScatter, gathered, cp4);
  EXPECT_NEAR(p.breakdown_s.cp_comm, 4 /*micro-batches*/ * 8 /*layers*/ * (2 * ag + rs), 1e-9);
  EXPECT_NEAR(breakdown_sum(p.breakdown_s) + p.breakdown_s.cp_comm, p.iteration_s,
              1e-9 * p.iteration_s);
  // The ring exchange hides behind the attention at least partly: never more exposed.
  stack.cp_comm = costmodel::CpCommType::P2p;
  const auto q = simulate(model, cluster, s, o).prediction;
  EXPECT_LT(q.breakdown_s.cp_comm, p.breakdown_s.cp_comm);
  EXPECT_LT(q.iteration_s, p.iteration_s);
  // cp = 1 charges nothing.
  EXPECT_EQ(simulate(model, cluster, strategy(1, 2, 1, 1, 4), o).prediction.breakdown_s.cp_comm, 0);
}

// TorchTitan repeats GQA's K/V heads before SDPA (repeat_kv in the model code, stack key
// attention.layout_copies), so context parallelism exchanges every query head: with 16 heads
// and 4 K/V heads, four times the K/V bytes of a kernel that takes the K/V heads as they are.
TEST(Simulator, RepeatedKvHeadsAreWhatContextParallelExchanges) {
  auto model = synthetic_model();  // 8 layers, h 1024, 16 heads
  model.seq_len = 4096;
  model.kv_heads = 4;
  const auto cluster = strata::testing::tables_only_cluster("dgx-a100");
  auto stack = costmodel::load_software_stack("torchtitan-2024");
  ASSERT_TRUE(stack.attention_layout_copies);
  ASSERT_EQ(stack.cp_comm, costmodel::CpCommType::AllGather);
  SimulateOptions o;
  o.stack = &stack;
  Strategy s = strategy(1, 2, 1, 1, 4);  // tp 2, cp 4: one CP group of 4 ranks in a node
  s.cp = 4;
  s.zero = 3;
  const costmodel::CollectiveCost coll(cluster);
  const costmodel::PlacedGroup cp4{4, 1, 4};
  // Gathered K/V: cp x 2 (K and V) x (4096 / 4) tokens x width / tp 2 x 2 B, each of 4
  // micro-batches and 8 layers gathering twice and reduce-scattering once.
  const auto charged = [&](double width) {
    const double gathered = 4 * 2.0 * 1024 * (width / 2) * 2;
    return 4 * 8 *
           (2 * coll.time_s(costmodel::Collective::AllGather, gathered, cp4) +
            coll.time_s(costmodel::Collective::ReduceScatter, gathered, cp4));
  };
  EXPECT_NEAR(simulate(model, cluster, s, o).prediction.breakdown_s.cp_comm, charged(1024), 1e-9);
  stack.attention_layout_copies = false;
  EXPECT_NEAR(simulate(model, cluster, s, o).prediction.breakdown_s.cp_comm, charged(256), 1e-9);
}

TEST(Simulator, ContextParallelNeedsAFusedAttentionKernelAndEvenChunks) {
  auto model = synthetic_model();
  model.seq_len = 4096;
  const auto cluster = strata::testing::tables_only_cluster("dgx-a100");
  const auto unfused = costmodel::load_software_stack("megatron-2021");
  SimulateOptions o;
  o.stack = &unfused;
  Strategy s = strategy(1, 1, 1, 1, 4);
  s.cp = 2;
  EXPECT_THROW(simulate(model, cluster, s, o), InputError);
  const auto flash = costmodel::load_software_stack("mcore-2024");
  o.stack = &flash;
  model.seq_len = 4094;  // not a multiple of 2 x cp = 4
  EXPECT_THROW(simulate(model, cluster, s, o), InputError);
}

// Gradients reduce over the dp x cp ranks: with cp = 2 and dp = 1 there still is a
// gradient reduction, on a group of 2.
TEST(Simulator, ContextParallelRanksReduceGradientsTogether) {
  auto model = synthetic_model();
  model.seq_len = 4096;
  const auto cluster = strata::testing::tables_only_cluster("dgx-a100");
  auto stack = costmodel::load_software_stack("mcore-2024");
  stack.overlap_grad_reduce = false;  // one reduction after the backward: all of it exposed
  SimulateOptions o;
  o.stack = &stack;
  Strategy s = strategy(1, 1, 1, 1, 4);
  s.cp = 2;
  const auto p = simulate(model, cluster, s, o).prediction;
  const double params = models::ModelGraph::build(model, 1).total_params();
  const costmodel::CollectiveCost coll(cluster);
  EXPECT_NEAR(p.breakdown_s.dp_comm,
              coll.time_s(costmodel::Collective::AllReduce,
                          params * costmodel::dtype_bytes(stack.grad_reduce_dtype),
                          costmodel::PlacedGroup{2, 1, 2}),
              1e-9);
  EXPECT_GT(p.breakdown_s.dp_comm, 0);
}

// ---- FP8 --------------------------------------------------------------------------

// Only the linear layers move to the fp8 rate: with free memory traffic (the casts cost
// nothing) and roofline GEMMs, the compute shrinks by half of those layers' GEMM time, by
// hand: per layer and micro-batch 2 x b x s x 12h^2 FLOPs forward (QKV 3h^2, out h^2, MLP
// 8h^2) and twice that backward. Attention and the LM head keep their bf16 time.
TEST(Simulator, Fp8RunsTheLinearLayersAtTheFp8Rate) {
  const auto model = synthetic_model();  // 8 layers, h 1024, s 256
  auto cluster = flops_only_cluster();
  const double bf16 = cluster.device.peak_flops(costmodel::DType::Bf16);
  cluster.device.peak_tflops[costmodel::DType::Fp8] = 2 * bf16 / 1e12;
  const auto stack = flash_stack_without_overheads();
  SimulateOptions o;
  o.stack = &stack;
  Strategy s = strategy(1, 1, 1, 1, 4);
  const auto a = simulate(model, cluster, s, o).prediction;
  s.precision = "fp8";
  const auto b = simulate(model, cluster, s, o).prediction;
  const double h = 1024, tokens = 256, mbs = 4, layers = 8;
  const double linear_s = layers * mbs * 3 * 2 * tokens * 12 * h * h / (bf16 * cluster.device.gemm_efficiency);
  EXPECT_NEAR(a.breakdown_s.compute - b.breakdown_s.compute, linear_s / 2, 1e-6 * linear_s);
  EXPECT_EQ(a.precision, "bf16");
  EXPECT_EQ(b.precision, "fp8");
  // Memory: the FP8 weight and its transpose, 2 bytes per linear weight; and Transformer
  // Engine keeps the FP8 casts of the QKV, fc1 and fc2 inputs (h, h and 4h per token) for the
  // weight gradients, 1 byte each instead of 2 (one micro-batch of s.micro_batch sequences in
  // flight at pp 1).
  EXPECT_NEAR((b.peak_memory.weights - a.peak_memory.weights) * 1024.0 * 1024 * 1024,
              2 * layers * 12 * h * h, 1.0);
  ASSERT_EQ(s.micro_batch, 1);
  EXPECT_NEAR((a.peak_memory.activations - b.peak_memory.activations) * 1024.0 * 1024 * 1024,
              layers * tokens * (h + h + 4 * h), 1.0);
}

TEST(Simulator, Fp8OnADeviceWithoutAnFp8PeakIsOneClearError) {
  const auto model = synthetic_model();
  const auto cluster = strata::testing::tables_only_cluster("dgx-a100");
  Strategy s = strategy(1, 1, 1, 1, 4);
  s.precision = "fp8";
  try {
    simulate(model, cluster, s);
    FAIL() << "fp8 on an A100 simulated";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a100-sxm-80gb"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fp8"), std::string::npos) << e.what();
  }
  s.precision = "fp4";
  EXPECT_THROW(simulate(model, cluster, s), InputError);
  // bf16 in place of the stack's precision is accepted there.
  s.precision = "bf16";
  EXPECT_GT(simulate(model, cluster, s).prediction.iteration_s, 0);
}

// ---- ZeRO-2 / ZeRO-3 ---------------------------------------------------------------

// ZeRO-3 without prefetch: every group's forward and backward all-gathers wait (2 per
// group and micro-batch); its reduce-scatters may hide behind the backward. No end-of-
// iteration reduction and no parameter all-gather after the step.

// MFU counts attention's whole s x s matrix while a causal flash kernel runs half of it: where
// attention dominates the model FLOPs the simulator says so, with the executed/counted ratio;
// at a short sequence (attention a small share) it stays quiet.
TEST(Simulator, WarnsWhenMfuCountsAttentionFlopsTheCausalKernelSkips) {
  auto model = synthetic_model();
  const auto cluster = flops_only_cluster();
  const auto stack = flash_stack_without_overheads();
  SimulateOptions o;
  o.stack = &stack;
  auto attention_warning = [&](std::int64_t seq) {
    model.seq_len = seq;
    for (const auto& n : simulate(model, cluster, strategy(1, 1, 1, 1, 4), o).prediction.notes)
      if (n.find("attention's s x s FLOPs") != std::string::npos) return n;
    return std::string();
  };
  EXPECT_EQ(attention_warning(128), "");
  const std::string w = attention_warning(1 << 16);
  ASSERT_NE(w, "");
  EXPECT_EQ(w.rfind("warning:", 0), 0u) << w;
  EXPECT_NE(w.find("at sequence 65536"), std::string::npos) << w;
  // The executed/counted ratio lies between 0.5 (all attention) and 1 (none).
  const auto at = w.find("execute ");
  ASSERT_NE(at, std::string::npos);
  const double ratio = std::stod(w.substr(at + 8));
  EXPECT_GT(ratio, 0.5);
  EXPECT_LT(ratio, 5.0 / 6.0);  // the warning fires past a third of the FLOPs in attention
}

// An fp32 stack (the CPU runtime's) cannot be asked for 16-bit GEMMs: simulate and search
// refuse by name instead of predicting at a peak the training never runs at.
TEST(Simulator, Fp32StackRefusesA16BitPrecision) {
  const auto model = synthetic_model();
  const auto cluster = flops_only_cluster();
  const auto cpu = costmodel::load_software_stack("strata-cpu");
  SimulateOptions o;
  o.stack = &cpu;
  Strategy s = strategy(1, 1, 1, 1, 4);
  EXPECT_NO_THROW(simulate(model, cluster, s, o));
  s.precision = "bf16";
  try {
    simulate(model, cluster, s, o);
    FAIL() << "bf16 on an fp32 stack was simulated";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot run precision bf16"), std::string::npos) << e.what();
  }
}

// The CPU runtime trains in fp32 and steps its weights in place: 4 B of weights, 4 B of
// gradients and 8 B of AdamW moments per parameter (its own count, runtime/adamw.h and
// tests/integration/runtime_memory_test.cpp), not mixed precision's 2 + 4 + 12. The tiny
// model has P = 218,496 parameters (wte 256x64 + wpe 32x64 + 4 blocks of 49,984 + final
// norm 128, counted by hand).
TEST(Simulator, Fp32StackHoldsTheBytesTheCpuRuntimeHolds) {
  const auto model = models::load_model("tiny");
  const auto cluster = costmodel::load_cluster("local-cpu");
  const auto cpu = costmodel::load_software_stack("strata-cpu");
  SimulateOptions o;
  o.stack = &cpu;
  Strategy s = strategy(1, 1, 1, 1, 8);
  const auto parts = simulate(model, cluster, s, o).prediction.peak_memory;
  constexpr double kParams = 218496, kGiB = 1024.0 * 1024 * 1024;
  EXPECT_NEAR(parts.weights * kGiB, 4 * kParams, 1e-6);
  EXPECT_NEAR(parts.grads * kGiB, 4 * kParams, 1e-6);
  EXPECT_NEAR(parts.optimizer * kGiB, 8 * kParams, 1e-6);
}

}  // namespace
}  // namespace strata::planner

namespace strata::planner {
namespace {

// A plan file's stored prediction is replaced by the one its model and strategy give; the
// user is told when they differed (a model edited after planning), and a plan whose cluster
// is gone keeps its stored numbers (or, with none, is refused by name).
TEST(PlanRecompute, ReplacesAStalePredictionAndSaysSo) {
  Plan p;
  p.model = models::load_model("tiny");
  p.cluster = "local-cpu";
  p.strategy = strategy(1, 1, 1, 1, 8);
  p.stage_layers = even_stage_layers(p.model, 1, 1);
  EXPECT_EQ(recompute_plan_prediction(p, "--plan p.yaml"), "") << "no stored prediction: nothing to compare";
  const Prediction fresh = p.prediction;
  ASSERT_GT(fresh.peak_memory_gib, 0);
  EXPECT_EQ(recompute_plan_prediction(p, "--plan p.yaml"), "") << "an up-to-date prediction is not stale";
  p.model.hidden *= 16;  // edited after planning
  p.model.ffn *= 16;
  const std::string said = recompute_plan_prediction(p, "--plan p.yaml");
  EXPECT_NE(said.find("does not match its model and strategy"), std::string::npos) << said;
  EXPECT_GT(p.prediction.peak_memory_gib, fresh.peak_memory_gib);
  Plan gone = p;
  gone.cluster = "no-such-cluster";
  gone.prediction.peak_memory_gib = 3.5;
  EXPECT_EQ(recompute_plan_prediction(gone, "--plan p.yaml"), "");
  EXPECT_EQ(gone.prediction.peak_memory_gib, 3.5);
  // With a stand-in host, the model is what counts: the edited model's memory, not the
  // stored 3.5 GiB.
  Plan stood_in = gone;
  const std::string moved = recompute_plan_prediction(stood_in, "--plan p.yaml", "local-cpu");
  EXPECT_NE(moved.find("no-such-cluster cannot be loaded"), std::string::npos) << moved;
  EXPECT_NE(moved.find("recomputed on local-cpu"), std::string::npos) << moved;
  EXPECT_NEAR(stood_in.prediction.peak_memory_gib, p.prediction.peak_memory_gib, 1e-9);
  gone.prediction.peak_memory_gib = 0;
  EXPECT_THROW(recompute_plan_prediction(gone, "--plan p.yaml"), InputError);
}

// On a TorchTitan stack, recompute selective is TorchTitan's per-op policy: the backward
// re-runs wk, wo and w3 (every second mm of the block) besides the elementwise ops, and
// nothing else with FLOPs. Executed FLOPs per iteration (hardware TFLOP/s x time x GPUs)
// grow over no recompute by exactly those three GEMMs per block and micro-batch, by hand.
TEST(Simulator, TorchTitanSelectiveRecomputeIsThePerOpPolicy) {
  models::ModelSpec m = strata::testing::test_model("gqa", 4, 1024, 16, 4, 2816, 8, 512);
  m.activation = models::Activation::SwiGlu;
  m.norm = models::Norm::RmsNorm;
  m.positions = models::Positions::Rope;
  const auto cluster = flops_only_cluster();
  auto stack = costmodel::load_software_stack("torchtitan-2024");
  stack.kernel_overhead_us = 0;
  SimulateOptions o;
  o.stack = &stack;
  Strategy none = strategy(1, 1, 1, 2, 4);
  none.zero = 0;
  Strategy sel = none;
  sel.recompute = Recompute::Selective;
  EXPECT_TRUE(with_stack_recompute(sel, stack).recompute_modules.per_op);
  EXPECT_FALSE(with_stack_recompute(sel, costmodel::load_software_stack("mcore-2024")).recompute_modules.any());
  const auto executed = [&](const Strategy& s) {
    const Prediction p = simulate(m, cluster, s, o).prediction;
    return p.hardware_tflops_per_gpu * 1e12 * p.iteration_s;
  };
  const double tokens = 2 * 512.0, h = 1024, kv = 4 * 64.0, f = 2816;
  const double per_block = 2 * tokens * h * kv + 2 * tokens * h * h + 2 * tokens * h * f;
  const double micro_batches = 2, blocks = 4;
  EXPECT_NEAR(executed(sel) - executed(none), blocks * micro_batches * per_block, 1e-6 * executed(none));
  // Named explicitly, the same; and it stands alone.
  Strategy named = sel;
  named.recompute_modules.per_op = true;
  EXPECT_NEAR(executed(named), executed(sel), 1e-9 * executed(sel));
  named.recompute_modules.layernorm = true;
  EXPECT_THROW(simulate(m, cluster, named, o), InputError);
}

// TorchTitan's A100 page (bench/validation/torchtitan-a100.yaml, TA-L2-70B-64-sel-op-b1): Llama 2
// 70B under FSDP on 64 A100 80GB with per-op selective AC ran at local batch 1, and local batch
// 2 ran out of memory (the page's footnote). The per_op memory terms say the same; strata's
// attention-core selective mode, which keeps every activation of the block, would refuse both.
TEST(Simulator, TorchTitanPerOpMemoryAgreesWithThePublishedOutOfMemory) {
  const models::ModelSpec m = models::load_model("llama2-70b");
  const auto cluster = strata::testing::tables_only_cluster("dgx-a100");
  const auto stack = costmodel::load_software_stack("torchtitan-2024");
  SimulateOptions o;
  o.stack = &stack;
  for (std::int64_t lbs : {1, 2}) {
    Strategy s = strategy(64, 1, 1, lbs, 64 * lbs);
    s.zero = 3;
    s.recompute = Recompute::Selective;
    EXPECT_EQ(simulate(m, cluster, s, o).prediction.fits_memory, lbs == 1) << "local batch " << lbs;
    s.recompute_modules.core_attn = true;  // strata's selective mode on the same stack
    EXPECT_FALSE(simulate(m, cluster, s, o).prediction.fits_memory) << "local batch " << lbs;
  }
}

}  // namespace
}  // namespace strata::planner
