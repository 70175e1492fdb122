// GEMM sweep: for each problem and dtype, validate one run against the reference,
// then time warm-up + repetitions (validate-then-time, STYLE lesson 7). A problem
// whose result is wrong is not timed: its record carries the error and no time, and
// the profile writer leaves it out.
//
// Under several ranks every rank runs the same GEMM at the same time (as the ranks of
// a TP or DP group do in a training step); each repetition starts after a barrier, and
// its time is the slowest rank's. All ranks take every decision (skip, error, number
// of repetitions) from the same gathered values, so they never diverge.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/gemm_dtype.h"
#include "kernels/profiler/gemm_check.h"
#include "kernels/profiler/gemm_problems.h"
#include "kernels/profiler/timing.h"

namespace strata::kernels {
class Communicator;
}

namespace strata::kernels::profiler {

class GemmRunner;

struct GemmRecord {
  std::int64_t m = 0, n = 0, k = 0;
  GemmDType dtype = GemmDType::Fp32;
  std::string origin;
  TimingStats time;       // of the slowest rank, per repetition
  double tflops = 0;      // 2mnk / median time
  double efficiency = 0;  // tflops / peak (0 when the peak is unknown)
  GemmCheck check;        // summed over ranks
  std::string error;      // set when the problem was skipped or failed
  bool ok() const { return error.empty() && check.wrong == 0 && time.reps > 0; }
};

struct GemmSweepOptions {
  std::vector<GemmDType> dtypes{GemmDType::Fp32};
  TimingOptions timing{};
  double max_operand_gib = 8.0;  // skip problems whose A+B+C exceed this per rank
  // Seconds the shapes may take (after the sustained load); the shapes not started by then
  // are recorded as skipped, so a bounded run still returns every row it measured.
  // 0: no bound.
  double budget_s = 0;
};

// done, total, label ("gemm 1024x768x768 fp32").
using ProgressFn = std::function<void(std::size_t, std::size_t, const std::string&)>;

// Runs the problem with the most FLOPs that fits max_operand_gib, in the first dtype, back
// to back on every rank for options.timing.sustain_s seconds (the slowest rank's clock
// decides when all stop). Returns the seconds it ran (0 when sustain_s <= 0 or nothing fits).
double sustain_gemm_load(GemmRunner& runner, const std::vector<GemmProblem>& problems,
                         const GemmSweepOptions& options, Communicator* sync);

// `sync` (may be null: one rank) is the group of ranks that run the sweep together.
// Calls sustain_gemm_load first.
std::vector<GemmRecord> run_gemm_sweep(GemmRunner& runner, const std::vector<GemmProblem>& problems,
                                       const GemmSweepOptions& options, Communicator* sync,
                                       const ProgressFn& progress = {});

}  // namespace strata::kernels::profiler
