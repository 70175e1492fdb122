#include "kernels/profiler/timing.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace strata::kernels::profiler {

namespace {
double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  auto hi = static_cast<std::size_t>(std::ceil(pos));
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}
}  // namespace

TimingStats summarize_us(std::vector<double> samples_us) {
  TimingStats s;
  s.reps = static_cast<int>(samples_us.size());
  if (samples_us.empty()) return s;
  std::sort(samples_us.begin(), samples_us.end());
  s.median_us = percentile(samples_us, 0.5);
  s.p10_us = percentile(samples_us, 0.1);
  s.p90_us = percentile(samples_us, 0.9);
  return s;
}

int choose_reps(const TimingOptions& opt, double one_run_s) {
  int lo = std::max(1, opt.min_reps);
  int hi = std::max(lo, opt.max_reps);
  if (!(one_run_s > 0)) return hi;
  double fit = opt.budget_s / one_run_s + 1e-9;  // 0.3 / 0.05 is 5.999...
  if (fit >= hi) return hi;
  return std::clamp(static_cast<int>(fit), lo, hi);
}

std::string describe(const TimingOptions& opt) {
  std::string s = fmt::format("warm-up up to {}, {}..{} reps within {} s, median", opt.warmup, opt.min_reps,
                              opt.max_reps, opt.budget_s);
  if (opt.min_sample_s > 0)
    s += fmt::format("; each rep runs the kernel back to back for >= {} ms (mean per run)", opt.min_sample_s * 1e3);
  if (opt.sustain_s > 0)
    s += fmt::format("; after {:g} s of back-to-back GEMMs (sustained clocks)", opt.sustain_s);
  return s;
}

int runs_per_sample(const TimingOptions& opt, double one_run_s) {
  constexpr int kMaxRuns = 65536;
  if (!(opt.min_sample_s > 0)) return 1;
  if (!(one_run_s > 0)) return kMaxRuns;
  const double runs = std::ceil(opt.min_sample_s / one_run_s - 1e-9);
  return runs >= kMaxRuns ? kMaxRuns : std::max(1, static_cast<int>(runs));
}

}  // namespace strata::kernels::profiler
