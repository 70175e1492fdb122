// `strata validate`: the plans measured in rounds under mpirun, and the report of them
// (validation/validate_rounds.h).
#include "validation/validate_rounds.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/stop_signals.h"
#include "costmodel/device_profile.h"
#include "planner/simulator.h"
#include "report/report_data.h"
#include "validation/validate_runner.h"
#include "validation/validate_stats.h"

namespace strata::validation {

namespace {

namespace fs = std::filesystem;
using report::format_seconds;
using report::strategy_label;

std::string make_work_dir(const std::string& keep) {
  if (!keep.empty()) {
    std::error_code ec;
    fs::create_directories(keep, ec);
    if (ec) input_error("--keep-dir {}: cannot create it: {}", keep, ec.message());
    return keep;
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = fmt::format("{}/strata-validate-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(templ.data()))
    input_error("cannot create a temporary folder {}: {} (set TMPDIR or give --keep-dir)", templ,
                std::strerror(errno));
  return templ;
}

// Environment of the mpirun jobs validate starts: root allowed when we are root, one BLAS
// thread per rank, as `strata calibrate` measures the local-cpu profile, and Open MPI's session
// directory inside this run's own folder (`work_dir`) unless the user placed it: Open MPI 4
// creates and removes a shared tree under TMPDIR, and MPI jobs started beside ours on the same
// node race it ("A call to mkdir was unable to create the desired directory ... File exists",
// open-mpi/ompi#8510). Other MPIs ignore the variables.
std::vector<std::pair<std::string, std::string>> mpirun_env(const std::string& work_dir) {
  std::vector<std::pair<std::string, std::string>> env;
  if (geteuid() == 0) env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}};
  if (!std::getenv("OPENBLAS_NUM_THREADS")) env.emplace_back("OPENBLAS_NUM_THREADS", "1");
  for (const char* var : {"OMPI_MCA_orte_tmpdir_base", "PRTE_MCA_prte_tmpdir_base"}) {
    const char* set = std::getenv(var);
    if (!set || !*set) env.emplace_back(var, fs::absolute(work_dir).string());
  }
  return env;
}

// One launch of `strata train` on a plan.
struct Attempt {
  std::string status;  // "ok" | "failed" | "timeout"
  int exit_code = 0;
  std::string error;
  std::vector<StepMetric> steps;
};

}  // namespace

std::string plan_file_stem(const std::string& dir, std::size_t index) {
  return fmt::format("{}/plan-{}", dir, index + 1);
}

namespace {

Attempt launch(const ValidateOptions& f, const PlanToRun& p, std::size_t index, const std::string& dir,
               const std::string& strata) {
  Attempt a;
  const std::string stem = plan_file_stem(dir, index);
  const std::string plan_path = stem + ".yaml", metrics = stem + ".jsonl", log = stem + ".log";
  write_file_atomic(plan_path, planner::plan_to_yaml(p.plan));
  std::error_code ec;
  fs::remove(metrics, ec);
  const auto env = mpirun_env(dir);
  const std::vector<std::string> argv{f.mpirun,  "-np",     std::to_string(f.np), "--oversubscribe",
                                      strata,    "train",   "--plan",             plan_path,
                                      "--steps", std::to_string(f.steps),         "--synthetic",
                                      "--metrics", metrics};
  const ProcessResult pr = run_process(argv, env, f.timeout_s, log);
  a.exit_code = pr.exit_code;
  if (pr.timed_out) {
    a.status = "timeout";
    a.error = fmt::format("killed after {:.0f} s (--timeout)", f.timeout_s);
    return a;
  }
  if (pr.exit_code != 0) {
    a.status = "failed";
    a.error = first_error_line(pr.log);
    if (a.error.empty()) a.error = "no output";
    return a;
  }
  try {
    a.steps = parse_metrics_jsonl(read_file(metrics), metrics);
  } catch (const InputError& e) {
    a.status = "failed";
    a.error = e.what();
    return a;
  }
  if (static_cast<int>(a.steps.size()) <= f.warmup) {
    a.status = "failed";
    a.error = fmt::format("{} steps recorded, need more than the {} warm-up steps", a.steps.size(), f.warmup);
    return a;
  }
  a.status = "ok";
  return a;
}

// `strata calibrate --quick` of this machine under mpirun, at the shapes the plans use
// (their TP degrees, their largest micro-batch), into `out`; the cluster with it applied.
costmodel::ClusterSpec recalibrated_cluster(const ValidateOptions& f, const std::vector<PlanToRun>& plans,
                                            const costmodel::ClusterSpec& cluster, const std::string& out,
                                            const std::string& strata) {
  std::set<int> tps{1};
  std::int64_t mb = 1;
  for (const auto& p : plans) {
    tps.insert(p.plan.strategy.tp);
    mb = std::max(mb, p.plan.strategy.micro_batch);
  }
  const auto env = mpirun_env(fs::path(out).parent_path().string());
  const std::vector<std::string> argv{f.mpirun, "-np", std::to_string(f.np), "--oversubscribe", strata,
                                      "calibrate", "--backend", "cpu", "--quick", "--model", f.model,
                                      "--tp-degrees", fmt::format("{}", fmt::join(tps, ",")),
                                      "--micro-batch", std::to_string(mb), "--out", out};
  const ProcessResult pr = run_process(argv, env, f.timeout_s, out + ".log");
  if (pr.timed_out) input_error("--recalibrate: calibration killed after {:.0f} s (--timeout)", f.timeout_s);
  if (pr.exit_code != 0) {
    const std::string why = first_error_line(pr.log);
    input_error("--recalibrate: calibration failed (exit {}): {}", pr.exit_code, why.empty() ? "no output" : why);
  }
  costmodel::ClusterSpec c = cluster;
  costmodel::apply_profile(c, costmodel::load_device_profile(out), out);
  return c;
}

// The 1-minute load average (-1 if unknown).
double host_load() {
  std::ifstream in("/proc/loadavg");
  double load1 = -1;
  if (!(in >> load1)) return -1;
  return load1;
}

int host_cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// True when `name` is an executable file: a path as given, a bare name on PATH.
bool find_executable(const std::string& name) {
  if (name.empty()) return false;
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (std::size_t at = 0; at <= dirs.size();) {
    std::size_t colon = dirs.find(':', at);
    if (colon == std::string::npos) colon = dirs.size();
    const std::string dir = dirs.substr(at, colon - at);
    const std::string full = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (::access(full.c_str(), X_OK) == 0 && !fs::is_directory(full)) return true;
    at = colon + 1;
  }
  return false;
}

// Other work on the machine inflates measured step times; say so rather than hide it.
void warn_if_busy(const Warn& warn) {
  const double load1 = host_load();
  if (load1 > 0.5 * host_cores())
    warn(fmt::format("the machine is busy (1-minute load {:.1f} on {} cores): measured step times will be "
                     "inflated by other processes",
                     load1, host_cores()));
}

// --recalibrate: calibrates this machine before round `round` and predicts every plan from
// that profile (the round's prediction, and the one the progress lines show).
void recalibrate_round(const ValidateOptions& f, int round, const std::string& dir,
                       const std::string& strata, const std::vector<PlanToRun>& plans,
                       const costmodel::ClusterSpec& cluster, const costmodel::SoftwareStack& stack,
                       ValidateReport& report) {
  const std::string profile = fmt::format("{}/round-{}-profile.yaml", dir, round + 1);
  const auto t0 = std::chrono::steady_clock::now();
  fmt::print(stderr, "{}calibrating this machine (strata calibrate --quick)... ",
             f.repeat > 1 ? fmt::format("round {}/{}: ", round + 1, f.repeat) : "");
  std::fflush(stderr);
  const costmodel::ClusterSpec now = recalibrated_cluster(f, plans, cluster, profile, strata);
  for (std::size_t i = 0; i < plans.size(); ++i) {
    planner::SimulateOptions so;
    so.stack = &stack;
    so.stage_layers = plans[i].plan.stage_layers;
    const auto sim = planner::simulate(plans[i].plan.model, now, plans[i].plan.strategy, so);
    report.runs[i].round_predicted_s.push_back(sim.prediction.iteration_s);
    report.runs[i].predicted_s = sim.prediction.iteration_s;  // this round's, for the progress line
    report.runs[i].predicted_compute_s = sim.prediction.breakdown_s.compute;
  }
  fmt::print(stderr, "done in {:.0f} s\n",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

// Plan i in round `round`: one launch, its progress line, and its steps into the report and `m`.
void measure_plan(const ValidateOptions& f, int round, std::size_t i, const std::string& dir,
                  const std::string& strata, const std::vector<PlanToRun>& plans,
                  ValidateReport& report, MeasuredSteps& m) {
  throw_if_stopped();
  PlanRun& r = report.runs[i];
  if (r.status != "ok") return;  // a plan that failed once is not retried
  fmt::print(stderr, "{}[{}/{}] {} ({}): ", f.repeat > 1 ? fmt::format("round {}/{} ", round + 1, f.repeat) : "",
             i + 1, plans.size(), plans[i].name, strategy_label(plans[i].plan.strategy));
  std::fflush(stderr);
  const Attempt a = launch(f, plans[i], i, dir, strata);
  r.exit_code = a.exit_code;
  r.host_load_1m = host_load();
  if (a.status != "ok") {
    r.status = a.status;
    r.error = a.error;
    fmt::print(stderr, "{} (exit {}): {}\n", r.status, r.exit_code, r.error);
    return;
  }
  std::vector<double> times, gemm_times;
  for (const auto& s : a.steps) {
    r.step_times_s.push_back(s.step_s);
    times.push_back(s.step_s);
    gemm_times.push_back(s.gemm_s);
  }
  r.runtime_predicted_s = a.steps.back().predicted_step_s;
  m.step_s[i].insert(m.step_s[i].end(), times.begin() + f.warmup, times.end());
  m.gemm_s[i].insert(m.gemm_s[i].end(), gemm_times.begin() + f.warmup, gemm_times.end());
  const double this_run = median_after_warmup(times, f.warmup);
  const double this_gemm = median_after_warmup(gemm_times, f.warmup);
  fmt::print(stderr, "measured {} predicted {} ({:+.1f}%){}\n", format_seconds(this_run),
             format_seconds(r.predicted_s), (r.predicted_s / this_run - 1) * 100,
             this_gemm > 0 ? fmt::format("; GEMM {} measured, compute {} predicted", format_seconds(this_gemm),
                                         format_seconds(r.predicted_compute_s))
                           : "");
}

}  // namespace

std::string check_launch_options(const ValidateOptions& f) {
  if (f.steps <= f.warmup)
    input_error("--steps ({}) must be greater than --warmup ({}) to leave steps to measure", f.steps, f.warmup);
  const std::string strata = f.strata.empty() ? self_executable() : f.strata;
  if (access(strata.c_str(), X_OK) != 0) input_error("--strata {}: not an executable file", strata);
  if (!find_executable(f.mpirun))
    input_error("--mpirun {}: not found{} (install Open MPI, or give the path of mpirun)", f.mpirun,
                f.mpirun.find('/') == std::string::npos ? " on PATH" : " or not executable");
  return strata;
}

ValidateReport new_report(const ValidateOptions& f, const std::string& model_name,
                          const std::vector<PlanToRun>& plans) {
  ValidateReport report;
  report.model = model_name;
  report.cluster = f.cluster;
  report.ranks = f.np;
  report.steps = f.steps;
  report.warmup = f.warmup;
  report.repeat = f.repeat;
  report.recalibrated = f.recalibrate;
  report.host_cores = host_cores();
  for (const auto& p : plans) {
    PlanRun r;
    r.name = p.name;
    r.model = p.plan.model.name;
    r.strategy = p.plan.strategy;
    r.predicted_s = p.plan.prediction.iteration_s;
    r.predicted_compute_s = p.plan.prediction.breakdown_s.compute;
    r.status = "ok";
    report.runs.push_back(std::move(r));
  }
  return report;
}

MeasuredSteps run_plans(const ValidateOptions& f, const std::string& strata,
                        const std::vector<PlanToRun>& plans, const costmodel::ClusterSpec& cluster,
                        const costmodel::SoftwareStack& stack, ValidateReport& report,
                        const Warn& warn) {
  warn_if_busy(warn);
  // Ctrl-C or SIGTERM: the running job's process group is ended, the temporary folder
  // removed (below), and main exits 128 + signal.
  const StopSignals stop_signals;
  const std::string dir = make_work_dir(f.keep_dir);
  MeasuredSteps m;
  m.step_s.resize(plans.size());
  m.gemm_s.resize(plans.size());
  // Rounds go over all plans in turn, so load from other work on the machine falls on
  // every plan alike rather than on whichever ran at the wrong moment.
  try {
    for (int round = 0; round < f.repeat; ++round) {
      if (f.recalibrate) recalibrate_round(f, round, dir, strata, plans, cluster, stack, report);
      for (std::size_t i = 0; i < plans.size(); ++i)
        measure_plan(f, round, i, dir, strata, plans, report, m);
    }
  } catch (const Stopped&) {
    fmt::print(stderr, "stopped\n");  // ends the plan's progress line
    if (f.keep_dir.empty()) fs::remove_all(dir);
    throw;
  } catch (...) {
    if (f.keep_dir.empty()) fs::remove_all(dir);
    throw;
  }
  if (f.keep_dir.empty()) fs::remove_all(dir);
  return m;
}

void finish_report(ValidateReport& report, const MeasuredSteps& m, const ValidateOptions& f,
                   const Warn& warn) {
  for (std::size_t i = 0; i < report.runs.size(); ++i) {
    PlanRun& r = report.runs[i];
    if (!r.round_predicted_s.empty()) r.predicted_s = median(r.round_predicted_s);
    if (r.status != "ok") continue;
    r.measured_s = median(m.step_s[i]);
    if (const double g = median(m.gemm_s[i]); g > 0) r.measured_gemm_s = g;
  }
  report.summary = summarize(report.runs);
  // Nothing measured is a failed validation, not a table of failures: one error line.
  if (!report.runs.empty() && report.summary.plans_failed == static_cast<int>(report.runs.size()))
    input_error("none of the {} plans ran under {} (first failure: {}, exit {}: {}); rerun with "
                "--keep-dir DIR to read each plan's log",
                report.runs.size(), f.mpirun, report.runs.front().status, report.runs.front().exit_code,
                report.runs.front().error.empty() ? "no output" : report.runs.front().error);
  if (report.summary.plans_failed > 0)
    warn(fmt::format("{} of {} plans failed to run; they are listed, and left out of the MAPE",
                     report.summary.plans_failed, report.runs.size()));
}

}  // namespace strata::validation
