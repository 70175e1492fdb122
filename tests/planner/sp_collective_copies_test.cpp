// Batch-first sequence parallelism (SoftwareStack::sp_collective_copies): each all-gather's
// output and each reduce-scatter's input is re-laid out by a copy of the whole tensor; and a
// DTensor column-parallel layer keeps its gathered input (sp_backward_regather false), so the
// backward gathers again only under per-op selective recompute. Counted by hand per layer.
#include <string>

#include <gtest/gtest.h>

#include "costmodel/memory_model.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "planner/simulator.h"
#include "planner/strategy.h"
#include "tests/tables_only_cluster.h"

namespace strata::planner {
namespace {

constexpr int kHidden = 1024, kSeq = 1024;

models::ModelSpec small_dense(int layers) {
  return models::parse_model_yaml("name: small\nlayers: " + std::to_string(layers) +
                                      "\nhidden: 1024\nheads: 8\nffn: 4096\nvocab: 4096\nseq_len: 1024\n"
                                      "activation: swiglu\nnorm: rmsnorm\ntied_embeddings: false\n",
                                  "small.yaml");
}

struct CopySetup {
  bool copies = true, regather = false;
  Recompute recompute = Recompute::None;
  int micro_batch = 2;
};

// One micro-batch, pp 1, dp 1: the step's compute and TP time are one rank's forward and
// backward. No kernel overhead, so a copy costs its bytes over the memory bandwidth.
Breakdown breakdown(int layers, const CopySetup& u) {
  const costmodel::ClusterSpec c = strata::testing::tables_only_cluster("dgx-h100");
  costmodel::SoftwareStack stack = costmodel::load_software_stack("torchtitan-2024");
  stack.sp_collective_copies = u.copies;
  stack.sp_backward_regather = u.regather;
  stack.kernel_overhead_us = 0;
  Strategy s;
  s.tp = 2, s.pp = 1, s.dp = 1;
  s.micro_batch = u.micro_batch, s.global_batch = u.micro_batch;
  s.zero = 3;
  s.sequence_parallel = true;
  s.recompute = u.recompute;
  if (u.recompute == Recompute::Selective) s.recompute_modules.per_op = true;
  SimulateOptions o;
  o.stack = &stack;
  return simulate(small_dense(layers), c, s, o).prediction.breakdown_s;
}

// What one more layer adds to the compute with the copies on, less with them off.
double copies_per_layer_s(CopySetup u) {
  auto layer = [&](const CopySetup& v) { return breakdown(4, v).compute - breakdown(3, v).compute; };
  const double on = layer(u);
  u.copies = false;
  return on - layer(u);
}

double one_copy_s(int micro_batch) {
  const costmodel::ClusterSpec c = strata::testing::tables_only_cluster("dgx-h100");
  const double bytes = 2.0 * micro_batch * kSeq * kHidden;  // the whole bf16 activation
  return 2.0 * bytes / (c.device.memory_bandwidth_gbps * 1e9 * c.device.memory_efficiency);  // read + write
}

// A block: two column-parallel inputs (attention, feed-forward) gathered in the forward, their
// gradients reduce-scattered in the backward; two row-parallel outputs reduce-scattered in the
// forward, their gradients gathered in the backward: 8 copies.
TEST(SpCollectiveCopies, EveryGatherAndReduceScatterCopiesTheWholeTensor) {
  EXPECT_NEAR(copies_per_layer_s({}) / one_copy_s(2), 8.0, 1e-6);
}

// Per-op selective AC re-runs the two gathers (+2); full recompute re-runs the forward (+4).
TEST(SpCollectiveCopies, RecomputeRerunsTheForwardsCopies) {
  EXPECT_NEAR(copies_per_layer_s({.recompute = Recompute::Selective}) / one_copy_s(2), 10.0, 1e-6);
  EXPECT_NEAR(copies_per_layer_s({.recompute = Recompute::Full}) / one_copy_s(2), 12.0, 1e-6);
}

// A micro-batch of one sequence gathers into a view: only the 4 reduce-scatters copy.
TEST(SpCollectiveCopies, OneSequenceGathersWithoutACopy) {
  EXPECT_NEAR(copies_per_layer_s({.micro_batch = 1}) / one_copy_s(1), 4.0, 1e-6);
}

// Megatron's re-gather: the column-parallel backward gathers its input again, two more
// all-gathers per layer, unless autograd kept it (DTensor) and no recompute re-ran the gather.
TEST(SpBackwardRegather, TheBackwardGathersAgainOnlyWhereTheInputWasDropped) {
  auto tp_layer = [](CopySetup u) { return breakdown(4, u).tp_comm - breakdown(3, u).tp_comm; };
  const double kept = tp_layer({.copies = false});
  const double regathered = tp_layer({.copies = false, .regather = true});
  const double per_op = tp_layer({.copies = false, .recompute = Recompute::Selective});
  ASSERT_GT(kept, 0.0);
  // At equal bytes an all-gather and a reduce-scatter cost alike inside one node: kept is
  // 8 collectives, the re-gather adds 2.
  EXPECT_NEAR(regathered / kept, 10.0 / 8.0, 0.02);
  EXPECT_NEAR(per_op, regathered, 1e-12);
}

// Memory: where autograd keeps the gathered input, the QKV and MLP-up inputs (the two norm
// outputs, 2 bytes each) are whole on every TP rank instead of a 1/tp sequence shard.
TEST(SpBackwardRegather, KeptGatheredInputsAreWholeOnEveryRank) {
  const models::ModelSpec m = small_dense(2);
  const int tp = 4;
  auto bytes = [&](bool gathered, bool sp) {
    return costmodel::layer_activation_bytes(m, 2, tp, sp, costmodel::RecomputeMode::None,
                                             costmodel::kUnfusedScoreBytes, 1, 1, {},
                                             {.gathered_gemm_inputs = gathered});
  };
  const double sbh = 2.0 * kSeq * kHidden;
  EXPECT_NEAR(bytes(true, true) - bytes(false, true), 2.0 * 2.0 * sbh * (1.0 - 1.0 / tp), 1e-6);
  EXPECT_DOUBLE_EQ(bytes(true, false), bytes(false, false));  // without SP every rank holds them whole anyway
}

TEST(SpCollectiveCopies, OnlyTheTorchTitanStacks) {
  for (const char* name : {"torchtitan-2024", "torchtitan-2024-compile"}) {
    const costmodel::SoftwareStack s = costmodel::load_software_stack(name);
    EXPECT_TRUE(s.sp_collective_copies) << name;
    EXPECT_FALSE(s.sp_backward_regather) << name;
  }
  const costmodel::SoftwareStack m = costmodel::load_software_stack("nemo-2024-perf");
  EXPECT_FALSE(m.sp_collective_copies);
  EXPECT_TRUE(m.sp_backward_regather);
}

}  // namespace
}  // namespace strata::planner
