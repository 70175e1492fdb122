// The training-loss fit on a dev set (calibration/fit_runs.h), as a figure: per source, the
// error with the kernel tables alone (no losses), in-sample after the fit, and held out
// (predicted by the fit that never saw the source); Kendall tau inside each sweep.
//
//   strata_bench_prediction_fit [runs.yaml] [--max-mape X]
//
// --max-mape X: exit 1 when a held-out source's MAPE exceeds X percent (the ctest figure
// check). Default runs file: bench/validation/runs/h100.yaml.
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/bench_main.h"
#include "calibration/fit_runs.h"
#include "calibration/measured_runs.h"
#include "strata_build_commit.h"  // STRATA_GIT_COMMIT, written at build time

namespace {

int run(int argc, char** argv) {
  double max_mape;
  const std::vector<std::string> args = strata::bench::positional_args(argc, argv, &max_mape);
  const std::string path =
      !args.empty() ? args[0] : std::string(STRATA_SOURCE_DIR) + "/bench/validation/runs/h100.yaml";
  const auto runs = strata::calibration::load_measured_runs(path);
  const auto f = strata::calibration::fit_training_losses(runs);
  fmt::print("# strata bench prediction_fit: training-loss fit, leave-one-source-out\n");
  fmt::print("# strata {} commit {} build {}; runs {}\n#\n", STRATA_VERSION, STRATA_GIT_COMMIT, STRATA_BUILD_TYPE, path);
  fmt::print("{}", strata::calibration::fit_report(f));
  std::map<std::string, strata::calibration::ErrorSummary> neutral, fitted;
  std::map<std::string, bool> fit_source;  // sources with rows the fit may use
  for (const auto& r : f.rows) {
    fit_source[r.source] = fit_source[r.source] || r.fit;
    neutral[r.source].add(r.neutral_s / r.measured_s - 1);
    fitted[r.source].add(r.fitted_s / r.measured_s - 1);
  }
  fmt::print("#\n# | source | rows | no losses: MAPE / mean | in-sample: MAPE / mean | held out: MAPE / mean / worst | tau |\n");
  int bad = 0;
  for (const auto& c : f.held_out) {
    const auto& n = neutral[c.source];
    const auto& i = fitted[c.source];
    fmt::print("# | {} | {} | {:.1f}% / {:+.1f}% | {:.1f}% / {:+.1f}% | {} | {} |\n", c.source, n.rows, 100 * n.mape,
               100 * n.bias, 100 * i.mape, 100 * i.bias,
               c.note.empty() ? fmt::format("{:.1f}% / {:+.1f}% / {:+.1f}%", 100 * c.error.mape, 100 * c.error.bias,
                                            100 * c.error.worst)
                              : c.note,
               std::isnan(c.kendall_tau) ? "-" : fmt::format("{:.2f}", c.kendall_tau));
    if (max_mape >= 0 && c.note.empty() && fit_source[c.source] && 100 * c.error.mape > max_mape) {
      std::fprintf(stderr, "error: held-out MAPE %.1f%% of '%s' exceeds the committed threshold %.1f%%\n",
                   100 * c.error.mape, c.source.c_str(), max_mape);
      bad = 1;
    }
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) { return strata::bench::bench_main(run, argc, argv); }
