// How a MoE layer's forward and token exchange meet the rest of the step on Megatron-Core
// stacks: the host-synced forward (SoftwareStack::moe_host_sync, TrainingLosses::moe_host_ms),
// a MoE layer's forward lasting at least the CPU time that issues it, checked by counting
// layers and micro-batches by hand; and the shared experts hiding their layer's exchange
// (SoftwareStack::moe_shared_expert_overlap).
#include <string>

#include <gtest/gtest.h>

#include "common/errors.h"
#include "costmodel/software_stack.h"
#include "costmodel/training_losses.h"
#include "models/model_spec.h"
#include "planner/simulator.h"
#include "planner/strategy.h"
#include "tests/input_error_of.h"
#include "tests/tables_only_cluster.h"

namespace strata::planner {
namespace {

constexpr int kMoeHost = 7;  // moe_host_ms in loss_parameters() order

models::ModelSpec small_moe(const char* extra = "") {
  return models::parse_model_yaml(
      std::string("name: small-moe\nlayers: 4\nhidden: 512\nheads: 8\nffn: 2048\nvocab: 4096\nseq_len: 512\n"
                  "activation: swiglu\nnorm: rmsnorm\ntied_embeddings: false\n") +
          extra,
      "small-moe.yaml");
}

// One pipeline stage and 8 micro-batches on one node: no bubble, so every second a forward
// gains is a second of the step.
Strategy one_stage(Recompute rc = Recompute::None) {
  Strategy s;
  s.tp = 1, s.pp = 1, s.dp = 8, s.ep = 8, s.etp = 1;
  s.micro_batch = 1;
  s.global_batch = 64;
  s.zero = 1;
  s.recompute = rc;
  return s;
}

Prediction run(const models::ModelSpec& m, const Strategy& s, double moe_host_ms, bool host_sync = true,
               bool shared_overlap = false) {
  costmodel::ClusterSpec c = strata::testing::tables_only_cluster("dgx-h100");
  c.device.training_losses.value[kMoeHost] = moe_host_ms;
  c.device.training_losses.present = true;
  costmodel::SoftwareStack stack = costmodel::load_software_stack("mcore-2024-deepep");
  stack.moe_host_sync = host_sync;
  stack.moe_shared_expert_overlap = shared_overlap;
  SimulateOptions o;
  o.stack = &stack;
  return simulate(m, c, s, o).prediction;
}

TEST(MoeHostSync, EachMoeLayerForwardLastsAtLeastTheHostTimeThatIssuesIt) {
  ASSERT_STREQ(costmodel::loss_parameters()[kMoeHost].name, "moe_host_ms");
  const models::ModelSpec m = small_moe("moe: {experts: 16, top_k: 2, expert_ffn: 512}\n");
  const Strategy s = one_stage();
  const double micro_batches = 64.0 / 8, moe_layers = 4;
  const Prediction none = run(m, s, 0);
  EXPECT_EQ(none.breakdown_s.host_wait, 0.0);
  // 4 and 6 ms are far above what a 512-wide layer takes on an H100 (a few tens of us): each
  // MoE layer's forward lasts exactly the host time, so 2 ms more per layer forward adds
  // 8 micro-batches x 4 layers x 2 ms to the step and to the host wait.
  const Prediction four = run(m, s, 4), six = run(m, s, 6);
  const double expected = micro_batches * moe_layers * 2e-3;
  EXPECT_NEAR(six.iteration_s - four.iteration_s, expected, 1e-9);
  EXPECT_NEAR(six.breakdown_s.host_wait - four.breakdown_s.host_wait, expected, 1e-9);
  // The wait is the host time less the GPU time of those forwards: less than all of it.
  EXPECT_GT(four.breakdown_s.host_wait, 0.0);
  EXPECT_LT(four.breakdown_s.host_wait, micro_batches * moe_layers * 4e-3);
  EXPECT_NEAR(four.iteration_s - none.iteration_s, four.breakdown_s.host_wait, 1e-9);
  // The breakdown still adds up to the step, and the compute did not grow.
  const Breakdown& b = four.breakdown_s;
  EXPECT_NEAR(b.compute + b.tp_comm + b.ep_comm + b.cp_comm + b.pp_comm + b.dp_comm + b.optimizer + b.bubble +
                  b.straggler + b.host_wait,
              four.iteration_s, 1e-9 * four.iteration_s);
  EXPECT_NEAR(b.compute, none.breakdown_s.compute, 1e-9 * none.breakdown_s.compute);
}

TEST(MoeHostSync, FullRecomputeIssuesTheForwardTwiceAndStacksWithoutTheSyncPayNothing) {
  const models::ModelSpec m = small_moe("moe: {experts: 16, top_k: 2, expert_ffn: 512}\n");
  const Strategy full = one_stage(Recompute::Full);
  const Prediction four = run(m, full, 4), six = run(m, full, 6);
  EXPECT_NEAR(six.iteration_s - four.iteration_s, 2 * 8 * 4 * 2e-3, 1e-9);
  // A dispatcher that never reads the routing to the host (moe_host_sync false).
  const Strategy s = one_stage();
  EXPECT_EQ(run(m, s, 6, false).iteration_s, run(m, s, 0, false).iteration_s);
  EXPECT_EQ(run(m, s, 6, false).breakdown_s.host_wait, 0.0);
}

// Drop and pad (a capacity factor): every expert's input is padded to its capacity, the sizes
// are known without the routing, and Megatron-Core's dispatcher never syncs the host.
TEST(MoeHostSync, DropAndPadNeverWaitsForTheHost) {
  const models::ModelSpec padded =
      small_moe("moe: {experts: 16, top_k: 2, expert_ffn: 512, capacity_factor: 1.0}\n");
  const Strategy s = one_stage();
  const Prediction six = run(padded, s, 6);
  EXPECT_EQ(six.breakdown_s.host_wait, 0.0);
  EXPECT_EQ(six.iteration_s, run(padded, s, 0).iteration_s);
  // The same model dropless waits.
  const models::ModelSpec dropless = small_moe("moe: {experts: 16, top_k: 2, expert_ffn: 512}\n");
  EXPECT_GT(run(dropless, s, 6).breakdown_s.host_wait, 0.0);
}

TEST(MoeHostSync, OnlyMoeLayersWait) {
  // Every second layer sparse (layer_step 2): half the layers wait.
  const models::ModelSpec alternate = small_moe("moe: {experts: 16, top_k: 2, expert_ffn: 512, layer_step: 2}\n");
  const Strategy s = one_stage();
  EXPECT_NEAR(run(alternate, s, 6).iteration_s - run(alternate, s, 4).iteration_s, 8 * 2 * 2e-3, 1e-9);
  // A dense model has no dispatcher.
  Strategy dense = one_stage();
  dense.ep = 1;
  const models::ModelSpec d = small_moe();
  EXPECT_EQ(run(d, dense, 6).iteration_s, run(d, dense, 0).iteration_s);
}

TEST(MoeHostSync, StackKeyAndParameterAreReadAndChecked) {
  const std::string base =
      "name: x\nprecision: bf16\nattention: {kernel: flash2}\n"
      "overlap: {tp_comm: false, grad_reduce: true, param_gather: false, p2p: async}\n";
  EXPECT_TRUE(costmodel::parse_software_stack(base + "moe_host_sync: true\n", "t.yaml").moe_host_sync);
  EXPECT_FALSE(costmodel::parse_software_stack(base, "t.yaml").moe_host_sync);
  try {
    (void)costmodel::parse_software_stack(base + "moe_host_sync: sometimes\n", "t.yaml");
    FAIL() << "a non-boolean moe_host_sync was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("moe_host_sync"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(costmodel::load_software_stack("mcore-2024-deepep").moe_host_sync);
  EXPECT_TRUE(costmodel::load_software_stack("nemo-2024-perf").moe_host_sync);
  EXPECT_FALSE(costmodel::load_software_stack("torchtitan-2024").moe_host_sync);
}

// A shared expert far wider than the exchange of its layer hides all of it; the step is shorter by
// exactly the exchange the plain run paid, and nothing else moves.
TEST(MoeSharedExpertOverlap, AWideSharedExpertHidesItsLayersWholeExchange) {
  const models::ModelSpec m =
      small_moe("moe: {experts: 16, top_k: 2, expert_ffn: 512, shared_experts: 1, shared_expert_ffn: 65536}\n");
  Strategy s = one_stage();
  s.dp = 16, s.ep = 16, s.global_batch = 128;  // ep 16 spans two nodes: a real exchange
  const Prediction plain = run(m, s, 0, false, false), hidden = run(m, s, 0, false, true);
  ASSERT_GT(plain.breakdown_s.ep_comm, 0.0);
  EXPECT_NEAR(hidden.breakdown_s.ep_comm, 0.0, 1e-12);
  // The step is shorter by the exchange, less the gradient reduction the shorter backward no
  // longer hides (the stack overlaps it with the backward).
  const double dp_exposed = hidden.breakdown_s.dp_comm - plain.breakdown_s.dp_comm;
  EXPECT_GE(dp_exposed, 0.0);
  EXPECT_NEAR(plain.iteration_s - hidden.iteration_s, plain.breakdown_s.ep_comm - dp_exposed, 1e-9);
  EXPECT_NEAR(hidden.breakdown_s.compute, plain.breakdown_s.compute, 1e-9 * plain.breakdown_s.compute);
  // A narrow shared expert hides no more than its own time: part of the exchange stays.
  const models::ModelSpec narrow =
      small_moe("moe: {experts: 16, top_k: 2, expert_ffn: 512, shared_experts: 1, shared_expert_ffn: 64}\n");
  const Prediction p = run(narrow, s, 0, false, false), q = run(narrow, s, 0, false, true);
  EXPECT_GT(q.breakdown_s.ep_comm, 0.0);
  EXPECT_LT(q.breakdown_s.ep_comm, p.breakdown_s.ep_comm);
  // Without shared experts the setting changes nothing.
  const models::ModelSpec none = small_moe("moe: {experts: 16, top_k: 2, expert_ffn: 512}\n");
  EXPECT_EQ(run(none, s, 0, false, true).iteration_s, run(none, s, 0, false, false).iteration_s);
}

TEST(MoeSharedExpertOverlap, StacksSayWhereNeMoTurnsItOn) {
  EXPECT_TRUE(costmodel::load_software_stack("nemo-2024-perf").moe_shared_expert_overlap);
  EXPECT_FALSE(costmodel::load_software_stack("nemo-2024-perf-deepep").moe_shared_expert_overlap);
  EXPECT_FALSE(costmodel::load_software_stack("mcore-2024").moe_shared_expert_overlap);
  const std::string base =
      "name: x\nprecision: bf16\nattention: {kernel: flash2}\n"
      "overlap: {tp_comm: false, grad_reduce: true, param_gather: false, p2p: async}\n";
  EXPECT_NE(strata::testing::input_error_of([&] {
              (void)costmodel::parse_software_stack(base + "moe_shared_expert_overlap: 3\n", "t.yaml");
            }).find("moe_shared_expert_overlap"),
            std::string::npos);
}

}  // namespace
}  // namespace strata::planner
