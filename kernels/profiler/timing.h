// Timing policy and statistics shared by the GEMM and collective sweeps: a few
// warm-up runs, then as many timed repetitions as fit a time budget (between
// min_reps and max_reps), summarized as median with p10/p90 (not the mean: one
// preempted run must not move the number).
#pragma once
#include <vector>

namespace strata::kernels::profiler {

struct TimingOptions {
  int warmup = 2;          // untimed runs (the first also validates)
  int min_reps = 3;
  int max_reps = 30;
  double budget_s = 0.3;   // target time of the timed repetitions of one row
};

struct TimingStats {
  double median_us = 0;
  double p10_us = 0;
  double p90_us = 0;
  int reps = 0;
};

// Median and 10th/90th percentiles (linear interpolation between order statistics).
TimingStats summarize_us(std::vector<double> samples_us);
// Repetitions that fit the budget given one run's duration, clamped to [min_reps, max_reps].
int choose_reps(const TimingOptions& opt, double one_run_s);

}  // namespace strata::kernels::profiler
