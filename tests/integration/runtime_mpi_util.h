// Helpers for the mpirun tests of `strata train`: write a plan file for a layout, run
// `mpirun -np N strata train` with a timeout, and read back the metrics JSONL and the
// per-parameter gradient norms the run wrote.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/json_text.h"
#include "models/model_spec.h"
#include "planner/plan.h"
#include "tests/integration/cli_run.h"

namespace strata::testing {

namespace fs = std::filesystem;

struct Layout {
  std::string name;
  std::string model = "tiny";
  int dp = 1, tp = 1, pp = 1, vpp = 1, cp = 1;
  int ep = 1, etp = 1;  // mixture-of-experts models: experts over ep (x etp) inside tp x dp
  planner::ScheduleKind schedule = planner::ScheduleKind::OneFOneB;
  int zero = 0;
  planner::Recompute recompute = planner::Recompute::None;
  bool sequence_parallel = false;
  std::int64_t micro_batch = 1;
  std::int64_t global_batch = 8;
  std::string rank_order = "tp-dp-pp";
  std::vector<std::vector<int>> stage_layers = {};  // empty: the even split
  int ranks() const { return dp * tp * pp * cp; }
};

inline std::string write_plan(const Layout& l, const fs::path& dir) {
  planner::Plan p;
  p.model = models::load_model(l.model);
  p.cluster = "local-cpu";
  planner::Strategy& s = p.strategy;
  s.dp = l.dp;
  s.tp = l.tp;
  s.pp = l.pp;
  s.cp = l.cp;
  s.ep = l.ep;
  s.etp = l.etp;
  s.vpp = l.vpp;
  s.schedule = l.schedule;
  s.zero = l.zero;
  s.recompute = l.recompute;
  s.sequence_parallel = l.sequence_parallel;
  s.micro_batch = l.micro_batch;
  s.global_batch = l.global_batch;
  s.rank_order = l.rank_order;
  p.stage_layers = l.stage_layers.empty() ? planner::even_stage_layers(p.model, l.pp, l.vpp) : l.stage_layers;
  p.prediction.iteration_s = 0.001;
  const std::string path = (dir / (l.name + ".plan.yaml")).string();
  write_file_atomic(path, planner::plan_to_yaml(p));
  return path;
}

inline std::vector<std::string> mpirun_prefix(int ranks) {
  // Ranks yield the core while they wait: the tests oversubscribe a 2-core machine.
  std::vector<std::string> a = {"--oversubscribe", "--bind-to", "none", "--mca", "mpi_yield_when_idle",
                                "1", "-np", std::to_string(ranks)};
  if (::geteuid() == 0) a.insert(a.begin(), "--allow-run-as-root");
  return a;
}

// `mpirun -np ranks strata <args>`.
inline RunResult mpirun_strata(int ranks, const std::vector<std::string>& args, double timeout_s = 90) {
  std::vector<std::string> a = mpirun_prefix(ranks);
  a.push_back(STRATA_EXE);
  a.insert(a.end(), args.begin(), args.end());
  return run_program(MPIEXEC, a, timeout_s);
}

struct StepRecord {
  std::int64_t step = 0;
  double loss = 0, grad_norm = 0;
  double lr = 0;
};

inline std::vector<StepRecord> read_metrics(const std::string& path) {
  std::vector<StepRecord> out;
  std::istringstream in(read_all(path));
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    auto j = strata::parse_json(line);
    out.push_back({j.at("step").get<std::int64_t>(), j.at("loss").get<double>(), j.at("grad_norm").get<double>(),
                   j.at("lr").get<double>()});
  }
  return out;
}

struct TrainRun {
  RunResult result;
  std::vector<StepRecord> steps;
  nlohmann::json grad_norms;  // {"step", "grad_norm", "params": {name: norm}}
};

// Trains `layout` for `steps` steps in a fresh folder under `dir`.
inline TrainRun train(const Layout& l, const fs::path& dir, int steps,
                      const std::vector<std::string>& extra = {}) {
  const std::string plan = write_plan(l, dir);
  const std::string metrics = (dir / (l.name + ".jsonl")).string();
  const std::string norms = (dir / (l.name + ".norms.json")).string();
  std::vector<std::string> args = {"train", "--plan", plan, "--steps", std::to_string(steps),
                                   "--metrics", metrics, "--debug-grad-norms", norms, "--log-every", "100"};
  args.insert(args.end(), extra.begin(), extra.end());
  TrainRun r;
  r.result = mpirun_strata(l.ranks(), args);
  if (r.result.exit_code == 0) {
    r.steps = read_metrics(metrics);
    r.grad_norms = strata::parse_json(read_all(norms));
  }
  return r;
}

inline fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("strata_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A fresh folder that is removed with everything in it when the test ends.
struct TempDir {
  explicit TempDir(const std::string& name) : path(fresh_dir(name)) {}
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  operator const fs::path&() const { return path; }
  fs::path operator/(const std::string& name) const { return path / name; }
  fs::path path;
};

}  // namespace strata::testing
