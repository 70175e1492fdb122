// `strata validate` results as data: one PlanRun per plan (failed runs kept), the
// summary (MAPE, Spearman, whether the predicted-fastest plan is measured fastest),
// and the table / JSON renderings.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "planner/strategy.h"

namespace strata::validation {

struct PlanRun {
  std::string name;             // "top 1", "baseline dp", "plans/a.yaml"
  std::string model;            // the model the plan ran (a --plans file may hold another)
  planner::Strategy strategy;
  double predicted_s = 0;       // simulator's iteration time (median over rounds when recalibrated)
  std::vector<double> round_predicted_s;  // per round, when recalibrated
  std::string status;           // "ok" | "failed" | "timeout"
  int exit_code = 0;
  std::string error;            // first error line when not ok
  std::vector<double> step_times_s;  // all steps of all runs (--repeat), in order
  double measured_s = 0;        // median of every run's steps after warm-up (status ok)
  double runtime_predicted_s = 0;  // what `strata train` logged as predicted_step_s (0: none)
  double measured_gemm_s = 0;      // median GEMM time per step after warm-up (0: not logged)
  double predicted_compute_s = 0;  // the simulator's compute on the critical path
  double host_load_1m = -1;        // 1-minute load average right after the run (-1: unknown)
};

struct ValidateSummary {
  int plans_ok = 0;
  int plans_failed = 0;
  double mape_pct = 0;                 // over ok plans; NaN when none
  std::optional<double> spearman;      // predicted vs measured order over ok plans
  int predicted_fastest = -1;          // index into runs (over all plans)
  int measured_fastest = -1;           // index into runs (over ok plans)
  bool predicted_fastest_is_fastest = false;
  double predicted_fastest_gap_pct = 0;  // its measured time over the fastest's, in % (NaN if it failed)
  bool predicted_fastest_within_5pct = false;
};

struct ValidateReport {
  std::string model;
  std::string cluster;
  int ranks = 0;
  int steps = 0;
  int warmup = 0;
  int repeat = 1;                  // runs per plan
  bool recalibrated = false;       // predictions from a calibration before each round
  int host_cores = 0;              // for reading host_load_1m (0: unknown)
  // The machine the plans ran on, detected at run time by the command (CPU model, cores,
  // SIMD, caches, memory) and the BLAS kernel the ranks used; "" when not known.
  std::string host;
  std::string blas;
  std::vector<PlanRun> runs;
  ValidateSummary summary;
};

ValidateSummary summarize(const std::vector<PlanRun>& runs);

// Aligned text table + summary lines.
std::string validate_table(const ValidateReport& r);
// {"schema_version":1,"command":"validate","model","cluster","ranks","steps","warmup_steps","repeat","host_cores","host","blas",
//  "recalibrated",
//  "plans":[{"name","strategy","predicted_step_s","round_predicted_s","measured_step_s","abs_error_pct",
//            "predicted_compute_s","measured_gemm_s","host_load_1m","status","exit_code","error",
//            "step_times_s"}],
//  "summary":{"plans_ok","plans_failed","mape_pct","spearman","predicted_fastest",
//             "measured_fastest","predicted_fastest_is_fastest","predicted_fastest_gap_pct",
//             "predicted_fastest_within_5pct"}}
std::string validate_json(const ValidateReport& r);

}  // namespace strata::validation
