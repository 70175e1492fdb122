// `strata validate`: predicted vs measured step time. For each plan (the planner's top
// strategies plus the pure dp / tp / pp baselines, all ranked plans, or plan files) it
// writes a plan YAML, runs `strata train` on it under mpirun, takes the median step
// time after warm-up and reports the error per plan, the MAPE and the rank correlation.
// A plan that fails to run is reported as failed, never dropped. The flags are here; the
// plan choice (validation/validate_plans.h) and the rounds under mpirun with the report
// of them (validation/validate_rounds.h) are the validation component's. With --runs it
// launches nothing: measured runs from a file are checked against the cost model
// (calibration/fit_runs.h).
#include <memory>
#include <optional>

#include "calibration/fit_runs.h"
#include "calibration/measured_runs.h"

#include "cli/commands.h"
#include "cli/options.h"
#include "common/output_file.h"
#include "common/errors.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/device_profile.h"
#include "kernels/cpu/blas_library.h"
#include "kernels/cpu/cpu_info.h"
#include "report/report_notes.h"
#include "validation/validate_plans.h"
#include "validation/validate_report.h"
#include "validation/validate_rounds.h"

namespace strata::cli {

namespace {

struct ValidateFlags {
  ModelClusterFlags mc;
  ValidateOptions run;  // everything but the model / cluster flags and the output format
  std::string format = "table";
  std::string runs;  // --runs: published / user runs checked against the cost model, nothing launched
};

// --keep-dir gets plan-N.yaml, plan-N.jsonl and plan-N.log for each plan: none of them may
// be one of the run's inputs (a --plans file named plan-1.yaml in that folder), and an
// existing plan or metrics file there is replaced only when strata wrote it (or --force).
void check_keep_dir(const ValidateFlags& f, std::size_t plans) {
  if (f.run.keep_dir.empty()) return;
  std::vector<PathFlag> outputs, inputs = model_cluster_inputs(f.mc);
  for (const auto& p : f.run.plans)
    if (p != "top" && p != "all") inputs.push_back({p, "--plans"});
  for (std::size_t i = 0; i < plans; ++i)
    for (const char* ext : {".yaml", ".jsonl", ".log"})
      outputs.push_back({plan_file_stem(f.run.keep_dir, i) + ext, "--keep-dir"});
  check_path_aliasing(outputs, inputs);
  for (const auto& out : outputs)
    if (!out.path.ends_with(".log")) check_replaceable(out.path, "--keep-dir");
}

void run_validate(ValidateFlags& f) {
  ValidateOptions& o = f.run;
  o.model = f.mc.model;
  o.cluster = f.mc.cluster;
  const Warn warn_line = [](const std::string& text) { warn(text); };
  const std::string strata = check_launch_options(o);

  const models::ModelSpec model = load_model_flag(f.mc);
  const costmodel::ClusterSpec cluster = load_cluster_flag(f.mc);
  const costmodel::SoftwareStack stack = load_stack_flag(f.mc, cluster);
  if (o.np > cluster.total_gpus())
    input_error("--np ({}) exceeds cluster {} ({} ranks)", o.np, f.mc.cluster, cluster.total_gpus());
  if (o.recalibrate && f.mc.seq != 0)
    input_error("--recalibrate measures the model at its own sequence length; drop --seq");
  const auto plans = choose_plans(o, model, cluster, stack, warn_line);
  check_keep_dir(f, plans.size());
  for (const auto& n : provenance_notes(cluster)) warn(n);

  // Measured here, under mpirun. Step times of these plans from another source would fill
  // the report's runs and a MeasuredSteps in place of run_plans; new_report and
  // finish_report stay as they are.
  ValidateReport report = new_report(o, model.name, plans);
  report.host = kernels::read_cpu_info().host_line();
  report.blas = kernels::blas_version();
  if (!o.recalibrate)
    if (const std::string note = report::other_processor_note(cluster, report.host); !note.empty()) warn(note);
  const MeasuredSteps measured = run_plans(o, strata, plans, cluster, stack, report, warn_line);
  finish_report(report, measured, o, warn_line);
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
  ValidateOptions& o = f.run;
  f.mc.model = "tiny";
  f.mc.cluster = "local-cpu";
  auto* cmd = app.add_subcommand("validate", "Run plans under mpirun and compare measured step times with predictions");
  cmd->footer(
      "Example: strata validate --cluster local-cpu --model tiny --np 2 --steps 12 --format json > v.json\n"
      "         strata compare --model tiny --cluster local-cpu --measured v.json --report r.html\n"
      "Each plan runs `mpirun -np N --oversubscribe strata train --plan P --steps S --synthetic --metrics M`;\n"
      "the measured step time is the median after the warm-up steps.");
  add_model_cluster_flags(*cmd, f.mc);
  cmd->add_option("--plans", o.plans,
                  "top (planner's best --top plus pure dp/tp/pp baselines), all (every plan that fits), "
                  "or plan YAML files; several may be given")
      ->capture_default_str();
  add_positive(*cmd, "--top", o.top, "how many of the planner's best plans for --plans top", 1000)
      ->capture_default_str();
  add_positive(*cmd, "--np", o.np, "MPI ranks", 4096)->capture_default_str();
  add_positive(*cmd, "--steps", o.steps, "training steps per plan", 1000000)->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "steps left out of the median")->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  add_positive(*cmd, "--repeat", o.repeat,
               "run every plan this many times, in rounds over all plans; the median is over all runs' "
               "steps after warm-up",
               1000)
      ->capture_default_str();
  cmd->add_flag("--recalibrate", o.recalibrate,
                "before every round, calibrate this machine (strata calibrate --quick at the plans' shapes, on --np "
                "ranks) and predict the round from that profile: for hosts whose speed drifts between a stored "
                "calibration and the measurement (the table says so)");
  add_positive<std::int64_t>(*cmd, "--global-batch", o.global_batch,
                             "sequences per step (default: the planner's default)", std::int64_t{1} << 40);
  cmd->add_option("--format,-f", f.format, "output format")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  cmd->add_option("--strata", o.strata, "strata binary to launch (default: this one)");
  cmd->add_option("--mpirun", o.mpirun, "mpirun to launch with")->capture_default_str();
  cmd->add_option("--timeout", o.timeout_s, "seconds allowed per plan")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("--keep-dir", o.keep_dir, "keep plan files, metrics and logs in this folder (plan-N.yaml, .jsonl, .log)");
  cmd->add_option("--runs", f.runs,
                  "check the cost model against measured runs (a runs file, calibration/measured_runs.h) instead of "
                  "launching plans: predicted vs measured per row, with --profile applied when given");
  add_files_help(*cmd, "--model, --cluster, --profile, --stack (files, or catalog names), --plans files, --runs",
                 "--keep-dir (plan-N.yaml, plan-N.jsonl, plan-N.log per plan; without it a temporary folder, "
                 "removed at the end), the report on stdout");
  cmd->callback([flags] {
    if (!flags->runs.empty()) return run_validate_runs(flags->runs, flags->mc.profile);
    run_validate(*flags);
  });
}

}  // namespace strata::cli
