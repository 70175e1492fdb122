// Timing policy and statistics shared by the GEMM and collective sweeps: a few
// warm-up runs, then as many timed repetitions as fit a time budget (between
// min_reps and max_reps), summarized as median with p10/p90 (not the mean: one
// preempted run must not move the number).
#pragma once
#include <string>
#include <vector>

namespace strata::kernels::profiler {

struct TimingOptions {
  int warmup = 2;          // untimed runs (the first also validates)
  int min_reps = 3;
  int max_reps = 30;
  double budget_s = 0.3;   // target time of the timed repetitions of one row
  // Each timed sample runs the kernel back to back until it lasts at least this long
  // and reports the mean per run. 0 = one run per sample. Bursts keep every rank busy
  // at once, as training does: with one short kernel per barrier the ranks overlap
  // only partly and the table misses the contention of cores that share execution
  // units or caches (measured ~30% on a 2-vCPU guest).
  double min_sample_s = 0;
  // GEMM sweeps: seconds of back-to-back GEMMs on every rank before the first timed row,
  // so the rows are timed at the clocks the device holds under sustained load (power and
  // thermal limits), as in a training run, not at the boost clock of an idle device
  // (a few repetitions after one warm-up, as published GEMM tables are taken). 0 = none.
  double sustain_s = 0;
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
// Runs per timed sample so that one sample lasts at least opt.min_sample_s: at least 1,
// at most 65536.
int runs_per_sample(const TimingOptions& opt, double one_run_s);
// One line for provenance: "warm-up up to 2, 3..30 reps within 0.3 s, median[; ...]".
std::string describe(const TimingOptions& opt);

}  // namespace strata::kernels::profiler
