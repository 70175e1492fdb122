// `strata validate`: predicted vs measured step time. For each plan (the planner's top
// strategies plus the pure dp / tp / pp baselines, all ranked plans, or plan files) it
// writes a plan YAML, runs `strata train` on it under mpirun, takes the median step
// time after warm-up and reports the error per plan, the MAPE and the rank correlation.
// A plan that fails to run is reported as failed, never dropped.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "calibration/fit_runs.h"
#include "calibration/measured_runs.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "report/report_data.h"
#include "validation/validate_report.h"
#include "validation/validate_runner.h"
#include "validation/validate_stats.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/device_profile.h"
#include "planner/plan.h"
#include "planner/search.h"
#include "planner/simulator.h"

namespace strata::cli {

namespace {

namespace fs = std::filesystem;

struct ValidateFlags {
  ModelClusterFlags mc;
  std::vector<std::string> plans{"top"};
  int top = 4;
  int np = 2;
  int steps = 10;
  int warmup = 2;
  int repeat = 1;
  bool recalibrate = false;
  std::int64_t global_batch = 0;
  std::string format = "table";
  std::string strata;
  std::string mpirun = "mpirun";
  double timeout_s = 300;
  std::string keep_dir;
  std::string runs;  // --runs: published / user runs checked against the cost model, nothing launched
};

struct PlanToRun {
  std::string name;
  planner::Plan plan;
};

// Adds `p` unless its strategy is already listed; then the listed one also gets p's name
// ("top 1 = baseline dp").
void add_unique(std::vector<PlanToRun>& out, PlanToRun p) {
  for (auto& q : out)
    if (q.plan.strategy == p.plan.strategy) {
      q.name += " = " + p.name;
      return;
    }
  out.push_back(std::move(p));
}

planner::Plan to_plan(const models::ModelSpec& model, const std::string& cluster, const planner::Candidate& c) {
  planner::Plan p;
  p.model = model;
  p.cluster = cluster;
  p.strategy = c.strategy;
  p.stage_layers = c.stage_layers;
  p.prediction = c.prediction;
  return p;
}

std::vector<PlanToRun> choose_plans(const ValidateFlags& f, const models::ModelSpec& model,
                                    const costmodel::ClusterSpec& cluster,
                                    const costmodel::SoftwareStack& stack) {
  std::vector<PlanToRun> out;
  auto search = [&](int top_k, auto restrict) {
    planner::SearchOptions opt;
    opt.stack = &stack;
    opt.gpus = f.np;
    opt.global_batch = f.global_batch;
    opt.top_k = top_k;
    restrict(opt);
    return planner::search(model, cluster, opt);
  };
  for (const auto& spec : f.plans) {
    if (spec == "top" || spec == "all") {
      const auto r = search(spec == "all" ? 100000 : f.top, [](planner::SearchOptions&) {});
      if (r.ranked.empty())
        throw NoFeasiblePlan(fmt::format("no strategy for {} fits on {} ranks of {} ({} over memory, {} invalid)",
                                         model.name, f.np, f.mc.cluster, r.infeasible_memory, r.invalid));
      for (std::size_t i = 0; i < r.ranked.size(); ++i)
        add_unique(out, {fmt::format("{} {}", spec, i + 1), to_plan(model, f.mc.cluster, r.ranked[i])});
      if (spec == "all") continue;
      // The pure baselines that fit: all ranks on one axis, the planner's best of the rest.
      const std::pair<const char*, void (*)(planner::SearchOptions&, int)> axes[] = {
          {"dp", [](planner::SearchOptions& o, int n) { o.dp = n, o.tp = 1, o.pp = 1; }},
          {"tp", [](planner::SearchOptions& o, int n) { o.dp = 1, o.tp = n, o.pp = 1; }},
          {"pp", [](planner::SearchOptions& o, int n) { o.dp = 1, o.tp = 1, o.pp = n; }}};
      for (const auto& [axis, set] : axes) {
        planner::SearchResult b;
        try {
          b = search(1, [&, set = set](planner::SearchOptions& o) { set(o, f.np); });
        } catch (const InputError& e) {
          warn(fmt::format("baseline {}={} skipped: {}", axis, f.np, e.what()));
          continue;
        }
        if (b.ranked.empty()) {
          warn(fmt::format("baseline {}={} skipped: no such strategy fits {} on {}", axis, f.np, model.name,
                           f.mc.cluster));
          continue;
        }
        add_unique(out, {fmt::format("baseline {}", axis), to_plan(model, f.mc.cluster, b.ranked.front())});
      }
    } else {
      planner::Plan p = planner::load_plan(spec);
      if (p.strategy.gpus() != f.np)
        input_error("--plans {}: the plan uses dp x tp x pp = {} ranks but --np is {}", spec, p.strategy.gpus(),
                    f.np);
      if (p.model.name != model.name)
        warn(fmt::format("--plans {} is for model {}, not {}; it runs with its own model", spec, p.model.name,
                         model.name));
      // Predict on this cluster (the file's prediction may be for another one).
      planner::SimulateOptions so;
      so.stack = &stack;
      so.stage_layers = p.stage_layers;
      const auto sim = planner::simulate(p.model, cluster, p.strategy, so);
      p.prediction = sim.prediction;
      p.stage_layers = sim.stage_layers;
      p.cluster = f.mc.cluster;
      out.push_back({spec, std::move(p)});
    }
  }
  return out;
}

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

// Environment of the mpirun jobs validate starts: root allowed when we are root, and one
// BLAS thread per rank, as `strata calibrate` measures the local-cpu profile.
std::vector<std::pair<std::string, std::string>> mpirun_env() {
  std::vector<std::pair<std::string, std::string>> env;
  if (geteuid() == 0) env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}};
  if (!std::getenv("OPENBLAS_NUM_THREADS")) env.emplace_back("OPENBLAS_NUM_THREADS", "1");
  return env;
}

// One launch of `strata train` on a plan.
struct Attempt {
  std::string status;  // "ok" | "failed" | "timeout"
  int exit_code = 0;
  std::string error;
  std::vector<StepMetric> steps;
};

Attempt launch(const ValidateFlags& f, const PlanToRun& p, std::size_t index, const std::string& dir,
               const std::string& strata) {
  Attempt a;
  const std::string stem = fmt::format("{}/plan-{}", dir, index + 1);
  const std::string plan_path = stem + ".yaml", metrics = stem + ".jsonl", log = stem + ".log";
  write_file_atomic(plan_path, planner::plan_to_yaml(p.plan));
  std::error_code ec;
  fs::remove(metrics, ec);
  const auto env = mpirun_env();
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
costmodel::ClusterSpec recalibrated_cluster(const ValidateFlags& f, const std::vector<PlanToRun>& plans,
                                            const costmodel::ClusterSpec& cluster, const std::string& out,
                                            const std::string& strata) {
  std::set<int> tps{1};
  std::int64_t mb = 1;
  for (const auto& p : plans) {
    tps.insert(p.plan.strategy.tp);
    mb = std::max(mb, p.plan.strategy.micro_batch);
  }
  const auto env = mpirun_env();
  const std::vector<std::string> argv{f.mpirun, "-np", std::to_string(f.np), "--oversubscribe", strata,
                                      "calibrate", "--backend", "cpu", "--quick", "--model", f.mc.model,
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

// Other work on the machine inflates measured step times; say so rather than hide it.
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

void warn_if_busy() {
  const double load1 = host_load();
  if (load1 > 0.5 * host_cores())
    warn(fmt::format("the machine is busy (1-minute load {:.1f} on {} cores): measured step times will be "
                     "inflated by other processes",
                     load1, host_cores()));
}

void run_validate(ValidateFlags& f) {
  if (f.steps <= f.warmup)
    input_error("--steps ({}) must be greater than --warmup ({}) to leave steps to measure", f.steps, f.warmup);
  const std::string strata = f.strata.empty() ? self_executable() : f.strata;
  if (access(strata.c_str(), X_OK) != 0) input_error("--strata {}: not an executable file", strata);
  if (!find_executable(f.mpirun))
    input_error("--mpirun {}: not found{} (install Open MPI, or give the path of mpirun)", f.mpirun,
                f.mpirun.find('/') == std::string::npos ? " on PATH" : " or not executable");

  const models::ModelSpec model = load_model_flag(f.mc);
  const costmodel::ClusterSpec cluster = load_cluster_flag(f.mc);
  const costmodel::SoftwareStack stack = load_stack_flag(f.mc, cluster);
  if (f.np > cluster.total_gpus())
    input_error("--np ({}) exceeds cluster {} ({} ranks)", f.np, f.mc.cluster, cluster.total_gpus());
  if (f.recalibrate && f.mc.seq != 0)
    input_error("--recalibrate measures the model at its own sequence length; drop --seq");
  const auto plans = choose_plans(f, model, cluster, stack);
  for (const auto& n : provenance_notes(cluster)) warn(n);

  warn_if_busy();
  const std::string dir = make_work_dir(f.keep_dir);
  ValidateReport report;
  report.model = model.name;
  report.cluster = f.mc.cluster;
  report.ranks = f.np;
  report.steps = f.steps;
  report.warmup = f.warmup;
  report.repeat = f.repeat;
  report.recalibrated = f.recalibrate;
  report.host_cores = host_cores();
  // Rounds go over all plans in turn, so load from other work on the machine falls on
  // every plan alike rather than on whichever ran at the wrong moment.
  for (const auto& p : plans) {
    PlanRun r;
    r.name = p.name;
    r.strategy = p.plan.strategy;
    r.predicted_s = p.plan.prediction.iteration_s;
    r.predicted_compute_s = p.plan.prediction.breakdown_s.compute;
    r.status = "ok";
    report.runs.push_back(std::move(r));
  }
  std::vector<std::vector<double>> measured(plans.size()), gemm(plans.size());
  try {
    for (int round = 0; round < f.repeat; ++round) {
      if (f.recalibrate) {
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
      for (std::size_t i = 0; i < plans.size(); ++i) {
        PlanRun& r = report.runs[i];
        if (r.status != "ok") continue;  // a plan that failed once is not retried
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
          continue;
        }
        std::vector<double> times, gemm_times;
        for (const auto& s : a.steps) {
          r.step_times_s.push_back(s.step_s);
          times.push_back(s.step_s);
          gemm_times.push_back(s.gemm_s);
        }
        r.runtime_predicted_s = a.steps.back().predicted_step_s;
        measured[i].insert(measured[i].end(), times.begin() + f.warmup, times.end());
        gemm[i].insert(gemm[i].end(), gemm_times.begin() + f.warmup, gemm_times.end());
        const double this_run = median_after_warmup(times, f.warmup);
        const double this_gemm = median_after_warmup(gemm_times, f.warmup);
        fmt::print(stderr, "measured {} predicted {} ({:+.1f}%){}\n", format_seconds(this_run),
                   format_seconds(r.predicted_s), (r.predicted_s / this_run - 1) * 100,
                   this_gemm > 0 ? fmt::format("; GEMM {} measured, compute {} predicted", format_seconds(this_gemm),
                                               format_seconds(r.predicted_compute_s))
                                 : "");
      }
    }
  } catch (...) {
    if (f.keep_dir.empty()) fs::remove_all(dir);
    throw;
  }
  if (f.keep_dir.empty()) fs::remove_all(dir);
  for (std::size_t i = 0; i < plans.size(); ++i) {
    PlanRun& r = report.runs[i];
    if (!r.round_predicted_s.empty()) r.predicted_s = median(r.round_predicted_s);
    if (r.status != "ok") continue;
    r.measured_s = median(measured[i]);
    if (const double g = median(gemm[i]); g > 0) r.measured_gemm_s = g;
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
  print_stdout(f.format == "json" ? validate_json(report) : validate_table(report));
}


void run_validate_runs(const std::string& runs_path, const std::string& profile_path) {
  const auto runs = calibration::load_measured_runs(runs_path);
  std::optional<costmodel::DeviceProfile> profile;
  if (!profile_path.empty()) profile = costmodel::load_device_profile(profile_path);
  print_stdout(calibration::check_runs(runs, profile ? &*profile : nullptr, profile_path).text);
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto flags = std::make_shared<ValidateFlags>();
  ValidateFlags& f = *flags;
  f.mc.model = "tiny";
  f.mc.cluster = "local-cpu";
  auto* cmd = app.add_subcommand("validate", "Run plans under mpirun and compare measured step times with predictions");
  cmd->footer(
      "Example: strata validate --cluster local-cpu --model tiny --np 2 --steps 12 --format json > v.json\n"
      "         strata compare --model tiny --cluster local-cpu --measured v.json --report r.html\n"
      "Each plan runs `mpirun -np N --oversubscribe strata train --plan P --steps S --synthetic --metrics M`;\n"
      "the measured step time is the median after the warm-up steps.");
  add_model_cluster_flags(*cmd, f.mc);
  cmd->add_option("--plans", f.plans,
                  "top (planner's best --top plus pure dp/tp/pp baselines), all (every plan that fits), "
                  "or plan YAML files; several may be given")
      ->capture_default_str();
  add_positive(*cmd, "--top", f.top, "how many of the planner's best plans for --plans top", 1000)
      ->capture_default_str();
  add_positive(*cmd, "--np", f.np, "MPI ranks", 4096)->capture_default_str();
  add_positive(*cmd, "--steps", f.steps, "training steps per plan", 1000000)->capture_default_str();
  cmd->add_option("--warmup", f.warmup, "steps left out of the median")->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  add_positive(*cmd, "--repeat", f.repeat,
               "run every plan this many times, in rounds over all plans; the median is over all runs' "
               "steps after warm-up",
               1000)
      ->capture_default_str();
  cmd->add_flag("--recalibrate", f.recalibrate,
                "before every round, calibrate this machine (strata calibrate --quick at the plans' shapes, on --np "
                "ranks) and predict the round from that profile: for hosts whose speed drifts between a stored "
                "calibration and the measurement (the table says so)");
  add_positive<std::int64_t>(*cmd, "--global-batch", f.global_batch,
                             "sequences per step (default: the planner's default)", std::int64_t{1} << 40);
  cmd->add_option("--format,-f", f.format, "output format")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  cmd->add_option("--strata", f.strata, "strata binary to launch (default: this one)");
  cmd->add_option("--mpirun", f.mpirun, "mpirun to launch with")->capture_default_str();
  cmd->add_option("--timeout", f.timeout_s, "seconds allowed per plan")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("--keep-dir", f.keep_dir, "keep plan files, metrics and logs in this folder");
  cmd->add_option("--runs", f.runs,
                  "check the cost model against measured runs (a runs file, calibration/measured_runs.h) instead of "
                  "launching plans: predicted vs measured per row, with --profile applied when given");
  cmd->callback([flags] {
    if (!flags->runs.empty()) return run_validate_runs(flags->runs, flags->mc.profile);
    run_validate(*flags);
  });
}

}  // namespace strata::cli
