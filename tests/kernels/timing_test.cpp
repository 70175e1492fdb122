// Timing statistics and the repetition budget.
#include <gtest/gtest.h>

#include "kernels/profiler/timing.h"

namespace strata::kernels::profiler {
namespace {

TEST(Timing, MedianAndPercentilesOfKnownSamples) {
  // 1..11 shuffled: median 6, p10 = 1 + 0.1*10 = 2, p90 = 10.
  TimingStats s = summarize_us({7, 3, 11, 1, 9, 5, 2, 10, 4, 8, 6});
  EXPECT_DOUBLE_EQ(s.median_us, 6);
  EXPECT_DOUBLE_EQ(s.p10_us, 2);
  EXPECT_DOUBLE_EQ(s.p90_us, 10);
  EXPECT_EQ(s.reps, 11);
}

TEST(Timing, MedianOfEvenCountInterpolates) {
  TimingStats s = summarize_us({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.median_us, 2.5);
  EXPECT_LE(s.p10_us, s.median_us);
  EXPECT_GE(s.p90_us, s.median_us);
}

TEST(Timing, OneOutlierDoesNotMoveTheMedian) {
  TimingStats s = summarize_us({10, 10, 10, 10, 1e6});
  EXPECT_DOUBLE_EQ(s.median_us, 10);
}

TEST(Timing, EmptySamples) {
  TimingStats s = summarize_us({});
  EXPECT_EQ(s.reps, 0);
  EXPECT_EQ(s.median_us, 0);
}

TEST(Timing, RepsFitTheBudgetWithinBounds) {
  TimingOptions o{2, 3, 30, 0.3};
  EXPECT_EQ(choose_reps(o, 0.01), 30);   // 30 fit exactly
  EXPECT_EQ(choose_reps(o, 0.001), 30);  // capped
  EXPECT_EQ(choose_reps(o, 0.05), 6);
  EXPECT_EQ(choose_reps(o, 10.0), 3);    // at least min_reps
  EXPECT_EQ(choose_reps(o, 0.0), 30);
}

TEST(Timing, BurstsLastAtLeastTheMinimumSample) {
  TimingOptions o{2, 3, 30, 0.3};
  EXPECT_EQ(runs_per_sample(o, 1e-6), 1);  // 0: one run per sample
  o.min_sample_s = 2e-3;
  EXPECT_EQ(runs_per_sample(o, 1e-3), 2);
  EXPECT_EQ(runs_per_sample(o, 0.3e-3), 7);   // 6 runs would be 1.8 ms
  EXPECT_EQ(runs_per_sample(o, 5e-3), 1);     // one run is long enough
  EXPECT_EQ(runs_per_sample(o, 1e-9), 65536); // capped
  EXPECT_EQ(runs_per_sample(o, 0.0), 65536);
  EXPECT_NE(describe(o).find(">= 2 ms"), std::string::npos) << describe(o);
  EXPECT_EQ(describe(TimingOptions{1, 3, 10, 0.1}).find("back to back"), std::string::npos);
}

}  // namespace
}  // namespace strata::kernels::profiler
