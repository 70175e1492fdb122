// How many micro-batches' fp32 logits the head's pipeline rank holds at its peak
// (costmodel::MemoryInputs::head_in_flight): Megatron's 1F1B and interleaved schedules run the
// last chunk's backward right after its forward, so one (two with the batch-level EP overlap,
// whose merged steps hold a forward beside a backward); GPipe runs every forward first.
#include <vector>

#include <gtest/gtest.h>

#include "costmodel/software_stack.h"
#include "planner/simulator.h"
#include "tests/planner/simulator_fixtures.h"

namespace strata::planner {
namespace {

using test_fixtures::strategy;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// seq 256, vocab 256000: one micro-batch's fp32 logits, 4 x 256 x 256000 bytes, make the head's rank
// the one with the peak.
double logits_gib(ScheduleKind schedule, int vpp, const char* stack_name = "megatron-2021") {
  const costmodel::SoftwareStack stack = costmodel::load_software_stack(stack_name);
  const auto model = strata::testing::test_model("head", 8, 1024, 16, 16, 4096, 256000, 256);
  const auto cluster = strata::testing::tables_only_cluster("dgx-a100");
  Strategy s = strategy(1, 1, 2, 1, 16);
  s.vpp = vpp;
  s.schedule = schedule;
  // Groups 0 = embedding, 1..8 = blocks, 9 = head; more blocks on the head's rank.
  SimulateOptions o;
  o.stack = &stack;
  o.stage_layers = vpp == 1 ? std::vector<std::vector<int>>{{0, 1, 2}, {3, 4, 5, 6, 7, 8, 9}}
                            : std::vector<std::vector<int>>{{0}, {1, 2}, {3}, {4, 5}, {6}, {7}, {8}, {9}};
  const Prediction p = simulate(model, cluster, s, o).prediction;
  EXPECT_EQ(p.peak_memory.stage, 1);
  return p.peak_memory.logits;
}

TEST(HeadLogitsMemory, OneMicroBatchOnOneFOneBAndInterleavedAllOnGPipe) {
  // Megatron's cross-entropy: the 16-bit logits and the fp32 copy it works on, 6 bytes each.
  const double one = 6.0 * 256 * 256000 / kGiB;
  EXPECT_DOUBLE_EQ(logits_gib(ScheduleKind::OneFOneB, 1), one);
  // Interleaved, 4 chunks per rank: the last rank warms up (vpp - 1) x pp = 6 forwards of
  // the first chunks, then alternates its last chunk's forward and backward.
  EXPECT_DOUBLE_EQ(logits_gib(ScheduleKind::Interleaved, 4), one);
  EXPECT_DOUBLE_EQ(logits_gib(ScheduleKind::GPipe, 1), 16 * one);
}

// What the loss holds per logit is the stack's: PyTorch's F.cross_entropy on an fp32 copy
// (TorchTitan) holds 12 bytes at the start of the backward, twice Megatron's 6.
TEST(HeadLogitsMemory, TheLossHoldsWhatItsStackSays) {
  EXPECT_EQ(costmodel::load_software_stack("megatron-2021").loss_bytes_per_logit, 6.0);
  EXPECT_EQ(costmodel::load_software_stack("nemo-2024-perf").loss_bytes_per_logit, 6.0);
  EXPECT_EQ(costmodel::load_software_stack("torchtitan-2024").loss_bytes_per_logit, 12.0);
  EXPECT_EQ(costmodel::load_software_stack("strata-cpu").loss_bytes_per_logit, 4.0);
  EXPECT_DOUBLE_EQ(logits_gib(ScheduleKind::OneFOneB, 1, "torchtitan-2024"),
                   2 * logits_gib(ScheduleKind::OneFOneB, 1, "megatron-2021"));
}

}  // namespace
}  // namespace strata::planner
