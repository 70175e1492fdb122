// The fit step of calibration: the training-loss parameters (costmodel/training_losses.h)
// from measured runs (calibration/measured_runs.h), `strata calibrate --from-runs`.
//
// Maximum a posteriori, bounded: minimise
//   sum_rows (log(predicted / measured) / row_sigma)^2 + sum_params ((value - prior) / prior_sd)^2
// over the active parameters, each kept inside its range, by Levenberg-Marquardt on
// finite-difference Jacobians (every evaluation re-simulates the rows). Which parameters
// are active: those the rows can tell something about (one prior sd moves the rows by more
// than half a row_sigma), at most one per `rows_per_parameter` fitted rows, the most
// telling first; the others stay at their prior ("prior"). A GEMM table measured under
// sustained load replaces gemm_sustain ("measured"). A parameter that ends on a bound is
// reported ("at_bound": a mechanism is missing, not a value); pairs the rows cannot tell
// apart (posterior correlation above 0.95) are named. Standard errors come from the
// posterior covariance, scaled by the residual variance when that exceeds row_sigma^2.
//
// Cross-validation holds out whole sources: each source's rows are predicted by a fit that
// never saw them (MAPE, mean signed error, worst row, Kendall tau inside its sweeps).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "calibration/measured_runs.h"
#include "costmodel/device_profile.h"
#include "costmodel/training_losses.h"

namespace strata::calibration {

struct FitOptions {
  // Per-row scatter of log(predicted / measured) the parameters cannot explain (published
  // numbers rounded or read from figures, run-to-run noise): the residuals' weight.
  double row_sigma = 0.04;
  int rows_per_parameter = 5;
  int max_iterations = 40;
  std::vector<std::string> freeze;  // parameter names held at their prior
  bool cross_validate = true;
  std::function<void(const std::string&)> progress;  // one line per step; may be empty
};

struct RowFit {
  std::string id, source, sweep;
  std::string stack, device;
  double params_b = 0;
  long long gpus = 0, seq = 0;
  double measured_mfu = 0;  // model FLOPs (strata's count) / (measured time x gpus x 16-bit peak)
  bool fp8 = false;         // FP8 linear layers (their MFU is not comparable)
  bool moe = false;         // a mixture-of-experts model: its residuals make MoE bands
  bool fit = true;
  double measured_s = 0;
  double neutral_s = 0;  // predicted with no training losses (the kernel tables alone)
  double fitted_s = 0;   // predicted with the fitted parameters
  double held_out_s = 0; // predicted by the fit that did not see the row's source (0: none)
};

struct ErrorSummary {
  int rows = 0;
  double mape = 0, bias = 0, worst = 0;  // fractions; worst: the largest |error|, signed
  void add(double err);
};

struct SourceCheck {
  std::string source;
  ErrorSummary error;
  double kendall_tau = 0;  // mean over the source's sweeps; NaN when it has none
  std::string note;        // why the source was not held out, when it was not
  // The parameters the fit without this source found ("gemm_sustain 0.89 (fitted), ..."): what
  // the held-out rows were predicted with.
  std::string parameters;
};

struct SweepCheck {
  std::string sweep;
  int points = 0;
  double kendall_tau = 0;  // predicted vs measured step time
  double best_gap = 0;     // predicted time of the measured best / predicted best - 1
};

struct FitResult {
  std::string device;
  costmodel::TrainingLosses losses;   // values, errors, statuses; record_yaml filled
  std::vector<RowFit> rows;
  ErrorSummary neutral, fitted;        // over the fitted rows
  std::vector<SourceCheck> held_out;   // leave-one-source-out
  std::vector<SweepCheck> sweeps;      // with the fitted parameters
  std::vector<std::string> notes;      // frozen, at bound, collinear
  int iterations = 0;
};

// InputError: fewer than 3 rows to fit, or rows on more than one device.
FitResult fit_training_losses(const std::vector<MeasuredRun>& runs, const FitOptions& options = {});

// Kendall's tau between two equally long series over the pairs tied in neither (1: the same
// order, -1: reversed); NaN when no such pair.
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b);

// The text `strata calibrate --from-runs` prints: parameters, rows, cross-validation.
std::string fit_report(const FitResult& r);
// The held-out predictions as residual entries (costmodel/stacks/residuals.yaml format, one
// per stack and source of fitted rows): the uncertainty band of a fitted profile is what it
// did on sources it never saw.
std::string residual_entries(const FitResult& r);

// `base` (the device the runs ran on) with the fitted training_losses section.
std::string fitted_profile_yaml(const FitResult& r, costmodel::DeviceProfile base, const std::string& runs_path);

// `strata validate --runs`: every run predicted with its cluster's own profile, or with
// `profile` applied over it (as --profile does), against what it measured; the table, the
// MAPE, mean signed and worst error per source and Kendall tau per sweep.
struct RunsCheck {
  std::vector<RowFit> rows;  // fitted_s: the prediction checked
  ErrorSummary all;
  std::string text;
};
RunsCheck check_runs(const std::vector<MeasuredRun>& runs, const costmodel::DeviceProfile* profile,
                     const std::string& profile_name);

}  // namespace strata::calibration
