// Predicted vs published step time for a set whose rows give the whole layout and the
// measured seconds per step (no FLOP convention to undo), e.g. bench/validation/dgxc-2025-h100.yaml
// (NVIDIA dgxc-benchmarking H100 recipes): each row is simulated with exactly its published
// strategy, on the set's cluster and stack, with the models the file defines.
//
//   strata_bench_prediction_error_steps [path/to/set.yaml] [stack] [--max-mape X]
//
// Rows may carry `precision: fp8` (Transformer Engine FP8 linear layers); the MAPE, the figure
// check and the residuals entry cover the rows in the stack's own precision, and FP8 rows get
// their own MAPE line. The cluster's fitted training losses apply unless --tables-only.
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "bench/bench_main.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "models/model_stats.h"
#include "planner/simulator.h"
#include "strata_build_commit.h"  // STRATA_GIT_COMMIT, written at build time

namespace {

using strata::bench::need;

int run(int argc, char** argv) {
  double max_mape;
  const std::vector<std::string> args = strata::bench::positional_args(argc, argv, &max_mape);
  const std::string path =
      !args.empty() ? args[0] : std::string(STRATA_SOURCE_DIR) + "/bench/validation/dgxc-2025-h100.yaml";
  const YAML::Node doc = strata::bench::load_yaml(path);
  const auto cluster = strata::bench::bench_cluster(strata::costmodel::load_cluster(need<std::string>(doc, "cluster", path)));
  const std::string stack_name = args.size() > 1 ? args[1] : need<std::string>(doc, "stack", path);
  const auto stack = strata::costmodel::load_software_stack(stack_name);
  const std::string source = need<std::string>(doc, "source", path);
  std::map<std::string, strata::models::ModelSpec> models;
  for (const auto& m : doc["models"]) {
    const std::string key = m.first.as<std::string>();
    models[key] = strata::models::parse_model_yaml(YAML::Dump(m.second), fmt::format("{}: models.{}", path, key));
  }

  fmt::print("# strata bench prediction_error_steps: predicted vs published step time\n");
  fmt::print("# strata {} commit {} build {}\n", STRATA_VERSION, STRATA_GIT_COMMIT, STRATA_BUILD_TYPE);
  fmt::print("# published: {} ({})\n", source, path);
  fmt::print("# cluster {} (device {}), stack {} ({}); every row simulated with its published layout, "
             "ZeRO {} (the stack's optimizer), no recompute\n",
             cluster.name, cluster.device.name, stack.name, to_string(stack.precision),
             stack.distributed_optimizer ? 1 : 0);
  fmt::print("# err = (predicted - published) / published\n#\n");
  fmt::print("# {:>10} {:>5} {:>3} {:>3} {:>3} {:>4} {:>3} {:>5} {:>5} {:>8} {:>8} {:>7} {:>6} {:>5}  {}\n", "row",
             "gpus", "tp", "pp", "cp", "dp", "vpp", "B", "prec", "pub(s)", "pred(s)", "err(%)", "mem", "fits",
             "predicted breakdown (s) compute/tp/pp/dp/opt/bubble");
  strata::bench::ErrorStats stats;       // rows in the stack's own precision
  strata::bench::ErrorStats other;       // rows with another precision (fp8)
  std::int64_t seq_min = 0, seq_max = 0;
  int index = 0;
  for (const auto& r : doc["runs"]) {
    const std::string where = fmt::format("{}: runs[{}]", path, index++);
    const std::string model_key = need<std::string>(r, "model", where);
    const auto it = models.find(model_key);
    if (it == models.end()) throw std::runtime_error(fmt::format("{}: model '{}' is not in models", where, model_key));
    const strata::models::ModelSpec& m = it->second;
    strata::planner::Strategy s;
    s.tp = need<int>(r, "tp", where);
    s.pp = need<int>(r, "pp", where);
    s.cp = need<int>(r, "cp", where);
    s.vpp = need<int>(r, "vpp", where);
    const int gpus = need<int>(r, "gpus", where);
    s.dp = gpus / (s.tp * s.pp * s.cp);
    s.micro_batch = need<std::int64_t>(r, "micro_batch", where);
    s.global_batch = need<std::int64_t>(r, "global_batch", where);
    s.sequence_parallel = need<bool>(r, "sp", where);
    s.zero = stack.distributed_optimizer ? 1 : 0;
    s.schedule = s.vpp > 1 ? strata::planner::ScheduleKind::Interleaved : strata::planner::ScheduleKind::OneFOneB;
    s.precision = r["precision"] ? r["precision"].as<std::string>() : "";
    if (s.gpus() != gpus)
      throw std::runtime_error(fmt::format("{}: gpus {} is not a multiple of tp x pp x cp", where, gpus));
    const double published = need<double>(r, "step_s", where);
    strata::planner::SimulateOptions options;
    options.stack = &stack;
    const auto p = strata::planner::simulate(m, cluster, s, options).prediction;
    const double err = (p.iteration_s - published) / published;
    const bool own = s.precision.empty() || s.precision == to_string(stack.precision);
    (own ? stats : other).add(err, strata::models::total_params(m) / 1e9, gpus);
    if (own) {
      seq_min = seq_min ? std::min(seq_min, m.seq_len) : m.seq_len;
      seq_max = std::max(seq_max, m.seq_len);
    }
    fmt::print("  {:>10} {:>5} {:>3} {:>3} {:>3} {:>4} {:>3} {:>5} {:>5} {:>8.3f} {:>8.3f} {:>+7.1f} {:>6.1f} {:>5}  "
               "{:.2f}/{:.2f}/{:.2f}/{:.2f}/{:.2f}/{:.2f}\n",
               need<std::string>(r, "id", where), gpus, s.tp, s.pp, s.cp, s.dp, s.vpp, s.global_batch,
               s.precision.empty() ? to_string(stack.precision) : s.precision, published, p.iteration_s, err * 100,
               p.peak_memory_gib, p.fits_memory ? "yes" : "NO", p.breakdown_s.compute, p.breakdown_s.tp_comm,
               p.breakdown_s.pp_comm, p.breakdown_s.dp_comm, p.breakdown_s.optimizer, p.breakdown_s.bubble);
    std::fflush(stdout);
  }
  fmt::print("# rows: {} in {}", stats.rows, to_string(stack.precision));
  if (other.rows) fmt::print(", {} in fp8", other.rows);
  fmt::print("\n# MAPE ({}): {:.1f} %, mean signed error {:+.1f} %, range {:+.1f} .. {:+.1f} %\n",
             to_string(stack.precision), 100 * stats.mape(), 100 * stats.bias(), 100 * stats.err_min,
             100 * stats.err_max);
  if (other.rows)
    fmt::print("# MAPE (fp8): {:.1f} %, mean signed error {:+.1f} %, range {:+.1f} .. {:+.1f} %\n",
               100 * other.mape(), 100 * other.bias(), 100 * other.err_min, 100 * other.err_max);
  strata::bench::print_residual_entry(stats, stack.name, cluster.device.name,
                                      fmt::format("{} ({})", std::filesystem::path(path).stem().string(), source),
                                      seq_min, seq_max);
  return strata::bench::check_max_mape(stats, max_mape);
}

}  // namespace

int main(int argc, char** argv) { return strata::bench::bench_main(run, argc, argv); }
