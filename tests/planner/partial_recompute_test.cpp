// Megatron-LM's block recompute (strategy.recompute_layers n): under full recompute only the
// first n blocks of each model chunk re-run their forward in the backward, the others keep
// their activations. Counted by hand: the re-run time is n / (blocks per chunk) of full
// recompute's, per chunk, and the kept blocks hold what a block holds without recompute.
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

models::ModelSpec eight_blocks() {
  return models::parse_model_yaml("name: eight\nlayers: 8\nhidden: 1024\nheads: 8\nffn: 4096\nvocab: 4096\n"
                                  "seq_len: 1024\nactivation: swiglu\nnorm: rmsnorm\ntied_embeddings: false\n",
                                  "eight.yaml");
}

// One micro-batch on pp ranks (dp 1, tp 1): the step's compute is every stage's in turn.
Prediction predict(int pp, Recompute rc, int recompute_layers) {
  const costmodel::ClusterSpec c = strata::testing::tables_only_cluster("dgx-h100");
  const costmodel::SoftwareStack stack = costmodel::load_software_stack("mcore-2024");
  Strategy s;
  s.pp = pp;
  s.micro_batch = 1, s.global_batch = 1;
  s.recompute = rc;
  s.recompute_layers = recompute_layers;
  SimulateOptions o;
  o.stack = &stack;
  return simulate(eight_blocks(), c, s, o).prediction;
}

// The share of full recompute's re-run time a partial one spends.
double rerun_share(int pp, int n) {
  const double none = predict(pp, Recompute::None, 0).breakdown_s.compute;
  const double full = predict(pp, Recompute::Full, 0).breakdown_s.compute;
  EXPECT_GT(full, none);
  return (predict(pp, Recompute::Full, n).breakdown_s.compute - none) / (full - none);
}

TEST(PartialRecompute, TheFirstNBlocksOfEachChunkReRun) {
  EXPECT_NEAR(rerun_share(1, 2), 2.0 / 8, 1e-9);  // one chunk of 8 blocks: 2 re-run
  EXPECT_NEAR(rerun_share(2, 1), 2.0 / 8, 1e-9);  // two chunks of 4: 1 each
  EXPECT_NEAR(rerun_share(2, 3), 6.0 / 8, 1e-9);
  EXPECT_NEAR(rerun_share(2, 4), 1.0, 1e-9);      // n covers the chunk: every block
  EXPECT_NEAR(rerun_share(2, 9), 1.0, 1e-9);
}

// pp 1, one micro-batch in flight: the 8 - n kept blocks hold a block's activations without
// recompute instead of its input alone.
TEST(PartialRecompute, KeptBlocksHoldTheirActivations) {
  const models::ModelSpec m = eight_blocks();
  const double kGiB = 1024.0 * 1024.0 * 1024.0;
  const double kept = costmodel::layer_activation_bytes(m, 1, 1, false, costmodel::RecomputeMode::None,
                                                        costmodel::kFlashScoreBytes) / kGiB;
  const double input = costmodel::layer_activation_bytes(m, 1, 1, false, costmodel::RecomputeMode::Full) / kGiB;
  const double full = predict(1, Recompute::Full, 0).peak_memory.activations;
  EXPECT_NEAR(predict(1, Recompute::Full, 3).peak_memory.activations - full, 5 * (kept - input), 1e-9);
}

TEST(PartialRecompute, OnlyWithFullRecompute) {
  Strategy s;
  s.global_batch = 1;
  s.recompute_layers = 2;
  s.recompute = Recompute::Selective;
  EXPECT_FALSE(validate(s, eight_blocks()).empty());
  s.recompute = Recompute::Full;
  EXPECT_TRUE(validate(s, eight_blocks()).empty());
  s.recompute_layers = -1;
  EXPECT_FALSE(validate(s, eight_blocks()).empty());
}

}  // namespace
}  // namespace strata::planner
