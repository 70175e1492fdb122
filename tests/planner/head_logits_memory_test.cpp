// How many micro-batches' fp32 logits the head's pipeline rank holds at its peak
// (costmodel::MemoryInputs::head_in_flight): Megatron's 1F1B and interleaved schedules run the
// last chunk's backward right after its forward, so one (two with the batch-level EP overlap,
// whose merged steps hold a forward beside a backward); GPipe runs every forward first.
#include <vector>

#include <gtest/gtest.h>

#include "planner/simulator.h"
#include "tests/planner/simulator_fixtures.h"

namespace strata::planner {
namespace {

using test_fixtures::strategy;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// seq 256, vocab 256000: one micro-batch's fp32 logits, 4 x 256 x 256000 bytes, make the head's rank
// the one with the peak.
double logits_gib(ScheduleKind schedule, int vpp) {
  const auto model = strata::testing::test_model("head", 8, 1024, 16, 16, 4096, 256000, 256);
  const auto cluster = strata::testing::tables_only_cluster("dgx-a100");
  Strategy s = strategy(1, 1, 2, 1, 16);
  s.vpp = vpp;
  s.schedule = schedule;
  // Groups 0 = embedding, 1..8 = blocks, 9 = head; four blocks per rank.
  SimulateOptions o;
  o.stage_layers = vpp == 1 ? std::vector<std::vector<int>>{{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}}
                            : std::vector<std::vector<int>>{{0, 1}, {2}, {3}, {4}, {5}, {6}, {7}, {8, 9}};
  const Prediction p = simulate(model, cluster, s, o).prediction;
  EXPECT_EQ(p.peak_memory.stage, 1);
  return p.peak_memory.logits;
}

TEST(HeadLogitsMemory, OneMicroBatchOnOneFOneBAndInterleavedAllOnGPipe) {
  const double one = 4.0 * 256 * 256000 / kGiB;
  EXPECT_DOUBLE_EQ(logits_gib(ScheduleKind::OneFOneB, 1), one);
  // Interleaved, 4 chunks per rank: the last rank warms up (vpp - 1) x pp = 6 forwards of
  // the first chunks, then alternates its last chunk's forward and backward.
  EXPECT_DOUBLE_EQ(logits_gib(ScheduleKind::Interleaved, 4), one);
  EXPECT_DOUBLE_EQ(logits_gib(ScheduleKind::GPipe, 1), 16 * one);
}

}  // namespace
}  // namespace strata::planner
