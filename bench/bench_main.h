// Shared by the benchmarks: the main() wrapper (one `error:` line, exit 2), and for the
// predicted-vs-published benches the error statistics, the `# residuals entry` line that
// costmodel/stacks/residuals.yaml is copied from, and the `--max-mape X` figure check.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace strata::bench {

template <typename Run>
int bench_main(Run run, int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}

// A validation file, with its path in the error of a malformed one.
inline YAML::Node load_yaml(const std::string& path) {
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(fmt::format("{}: {}", path, e.what()));
  }
}

// A key a validation file must have; `where` names the file and entry in the error.
template <typename T>
T need(const YAML::Node& n, const char* key, const std::string& where) {
  if (!n[key]) throw std::runtime_error(fmt::format("{}: missing key '{}'", where, key));
  return n[key].as<T>();
}

// `--tables-only`: predict with the kernel tables alone, the cluster's fitted training losses
// (costmodel/training_losses.h) left out; set by positional_args.
inline bool& tables_only() {
  static bool flag = false;
  return flag;
}

// Positional arguments; `--max-mape X` is taken out into *max_mape (-1 when absent) and
// `--tables-only` into tables_only().
inline std::vector<std::string> positional_args(int argc, char** argv, double* max_mape) {
  *max_mape = -1;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--max-mape" && i + 1 < argc) *max_mape = std::stod(argv[++i]);
    else if (std::string(argv[i]) == "--tables-only") tables_only() = true;
    else args.emplace_back(argv[i]);
  }
  return args;
}

// The cluster a prediction bench uses: its own profile, or with --tables-only none of its
// fitted losses; prints which (a fitted profile saw these rows: its errors are in-sample,
// strata_bench_prediction_fit gives the held-out ones).
template <typename Cluster>
Cluster bench_cluster(Cluster c) {
  if (tables_only()) c.device.training_losses = {};
  if (c.device.training_losses.present)
    fmt::print("# training losses: fitted (cluster profile {}); the fit saw these rows, so the errors below are "
               "in-sample: held-out errors in strata_bench_prediction_fit\n",
               c.profile.empty() ? "(inline)" : c.profile);
  else
    fmt::print("# training losses: none (kernel tables alone{}); nothing is fitted to these rows\n",
               tables_only() ? ", --tables-only" : "");
  return c;
}

// Relative errors of predicted vs published step time, and the range of rows they cover.
struct ErrorStats {
  int rows = 0;
  double sum_abs = 0, sum_signed = 0, max_abs = 0;
  double err_min = 1e300, err_max = -1e300;  // signed: the band's ends (prediction_band.h)
  double params_min = 1e300, params_max = 0;
  long long gpus_min = 1LL << 62, gpus_max = 0;

  void add(double err, double params_b, long long gpus) {
    ++rows;
    sum_abs += std::fabs(err), sum_signed += err, max_abs = std::max(max_abs, std::fabs(err));
    err_min = std::min(err_min, err), err_max = std::max(err_max, err);
    params_min = std::min(params_min, params_b), params_max = std::max(params_max, params_b);
    gpus_min = std::min(gpus_min, gpus), gpus_max = std::max(gpus_max, gpus);
  }
  double mape() const { return rows ? sum_abs / rows : 0.0; }
  double bias() const { return rows ? sum_signed / rows : 0.0; }
};

inline void print_residual_entry(const ErrorStats& e, const std::string& stack, const std::string& device,
                                 const std::string& set, long long seq_min, long long seq_max) {
  if (e.rows == 0) return;
  if (!tables_only()) {
    fmt::print("# residuals entry: with --tables-only (entries for fitted profiles: scripts/ship-profiles.sh)\n");
    return;
  }
  fmt::print("# residuals entry (costmodel/stacks/residuals.yaml):\n");
  fmt::print("#   - {{stack: {}, device: {}, set: \"{}\", rows: {}, mape: {:.3f}, max_abs: {:.3f}, "
             "bias: {:+.3f}, err: [{:+.3f}, {:+.3f}], params_b: [{:g}, {:g}], gpus: [{}, {}], seq: [{}, {}]}}\n",
             stack, device, set, e.rows, e.mape(), e.max_abs, e.bias(), e.err_min, e.err_max, e.params_min, e.params_max,
             e.gpus_min, e.gpus_max, seq_min, seq_max);
}

// 1 (with an error line) when the MAPE exceeds the committed threshold, else 0.
inline int check_max_mape(const ErrorStats& e, double max_mape) {
  if (max_mape < 0 || e.rows == 0 || 100 * e.mape() <= max_mape) return 0;
  std::fprintf(stderr, "error: MAPE %.1f%% exceeds the committed threshold %.1f%%\n", 100 * e.mape(), max_mape);
  return 1;
}

}  // namespace strata::bench
