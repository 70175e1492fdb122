#include "kernels/profiler/gemm_sweep.h"

#include <chrono>
#include <exception>

#include <fmt/format.h>

#include "kernels/backend.h"
#include "kernels/profiler/group_reduce.h"
#include "kernels/profiler/gemm_runner.h"

namespace strata::kernels::profiler {

namespace {

double operand_gib(const GemmProblem& p, GemmDType d) {
  double elems = static_cast<double>(p.m) * p.k + static_cast<double>(p.k) * p.n +
                 static_cast<double>(p.m) * p.n;
  return elems * element_bytes(d) / (1024.0 * 1024.0 * 1024.0);
}

void barrier(Communicator* c) {
  if (c && c->size() > 1) c->barrier();
}

}  // namespace

double sustain_gemm_load(GemmRunner& runner, const std::vector<GemmProblem>& problems,
                         const GemmSweepOptions& options, Communicator* sync) {
  if (!(options.timing.sustain_s > 0) || options.dtypes.empty()) return 0;
  const GemmDType dtype = options.dtypes.front();
  const GemmProblem* best = nullptr;
  for (const GemmProblem& p : problems)
    if (operand_gib(p, dtype) <= options.max_operand_gib &&
        (!best || static_cast<double>(p.m) * p.n * p.k > static_cast<double>(best->m) * best->n * best->k))
      best = &p;
  if (!best) return 0;
  runner.prepare(*best, dtype);
  // Bursts of about 50 ms between the ranks' agreement on the elapsed time.
  barrier(sync);
  const double one_s = max_over_ranks(sync, runner.run_timed_us(1) * 1e-6);
  const int runs = std::max(1, static_cast<int>(std::min(65536.0, 0.05 / std::max(one_s, 1e-9))));
  double elapsed = one_s;
  while (elapsed < options.timing.sustain_s) elapsed += max_over_ranks(sync, runs * runner.run_timed_us(runs) * 1e-6);
  runner.release();
  return elapsed;
}

std::vector<GemmRecord> run_gemm_sweep(GemmRunner& runner, const std::vector<GemmProblem>& problems,
                                       const GemmSweepOptions& options, Communicator* sync,
                                       const ProgressFn& progress) {
  if (options.timing.sustain_s > 0) {
    if (progress) progress(0, problems.size() * options.dtypes.size(),
                           fmt::format("sustained load for {:g} s", options.timing.sustain_s));
    sustain_gemm_load(runner, problems, options, sync);
  }
  std::vector<GemmRecord> out;
  const std::size_t total = problems.size() * options.dtypes.size();
  std::size_t done = 0;
  const auto start = std::chrono::steady_clock::now();
  bool over_budget = false;
  for (GemmDType dtype : options.dtypes) {
    for (const GemmProblem& p : problems) {
      GemmRecord rec;
      rec.m = p.m;
      rec.n = p.n;
      rec.k = p.k;
      rec.dtype = dtype;
      rec.origin = p.origin;
      const std::string label = fmt::format("gemm {}x{}x{} {}", p.m, p.n, p.k, to_string(dtype));
      if (progress) progress(done, total, label);
      ++done;
      // Every rank decides on the slowest rank's clock, so all stop at the same shape.
      if (!over_budget && options.budget_s > 0) {
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        over_budget = max_over_ranks(sync, elapsed) > options.budget_s;
      }
      if (over_budget) {
        rec.error = fmt::format("skipped: the sweep's {:g} s were spent", options.budget_s);
        out.push_back(rec);
        continue;
      }
      if (operand_gib(p, dtype) > options.max_operand_gib) {
        rec.error = fmt::format("skipped: operands need {:.1f} GiB (> {:.1f} GiB per rank)",
                                operand_gib(p, dtype), options.max_operand_gib);
        out.push_back(rec);
        continue;
      }
      // Validate (every rank), then agree on the outcome before any timing.
      std::string local_error;
      try {
        runner.prepare(p, dtype);
        rec.check = runner.validate();
      } catch (const std::exception& e) {
        local_error = e.what();
      }
      double failed = sum_over_ranks(sync, local_error.empty() ? 0.0 : 1.0);
      rec.check.checked = static_cast<std::int64_t>(sum_over_ranks(sync, double(rec.check.checked)));
      rec.check.wrong = static_cast<std::int64_t>(sum_over_ranks(sync, double(rec.check.wrong)));
      rec.check.max_error = max_over_ranks(sync, rec.check.max_error);
      if (failed > 0) {
        rec.error = local_error.empty() ? fmt::format("failed on {} other rank(s)", failed) : local_error;
      } else if (rec.check.wrong > 0) {
        rec.error = fmt::format("{} of {} checked elements wrong (max error {:.3g} of sum|a*b|, "
                                "tolerance {:.3g})",
                                rec.check.wrong, rec.check.checked, rec.check.max_error,
                                gemm_tolerance(dtype));
      }
      if (!rec.error.empty()) {
        runner.release();
        out.push_back(rec);
        continue;
      }
      // Warm-up: up to `warmup` runs, fewer when one run is long.
      double last_s = 0, warm_s = 0;
      for (int w = 0; w < std::max(1, options.timing.warmup); ++w) {
        barrier(sync);
        last_s = max_over_ranks(sync, runner.run_timed_us(1) * 1e-6);
        warm_s += last_s;  // same value on every rank: all ranks stop together
        if (warm_s > options.timing.budget_s / 2) break;
      }
      // Same on every rank (last_s is the group's maximum).
      const int runs = runs_per_sample(options.timing, last_s);
      const int reps = choose_reps(options.timing, last_s * runs);
      std::vector<double> samples;
      samples.reserve(static_cast<std::size_t>(reps));
      for (int r = 0; r < reps; ++r) {
        barrier(sync);
        double us = runner.run_timed_us(runs);
        samples.push_back(max_over_ranks(sync, us));
      }
      runner.release();
      rec.time = summarize_us(samples);
      double flop = 2.0 * static_cast<double>(p.m) * p.n * p.k;
      rec.tflops = rec.time.median_us > 0 ? flop / (rec.time.median_us * 1e-6) / 1e12 : 0;
      double peak = runner.peak_tflops(dtype);
      rec.efficiency = peak > 0 ? rec.tflops / peak : 0;
      out.push_back(rec);
    }
  }
  if (progress) progress(total, total, "gemm done");
  return out;
}

}  // namespace strata::kernels::profiler
