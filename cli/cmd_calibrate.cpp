// `strata calibrate`: measures the GEMMs a model's sharded layers run and the
// collectives of every group size available, prints them the nccl-tests way and
// writes a measured device profile (costmodel/device_profile.h format).
//
//   strata calibrate --backend cpu|cuda --out profile.yaml [--model M[,M2]]
//       [--tp-degrees 1,2,4,8] [--micro-batch B] [--quick] [--max-bytes N]
//       [--max-gemm-dim D] [--dtypes bf16,fp32] [--format table|json] [--name NAME]
//
//   strata calibrate --from-runs runs.yaml --out fitted.yaml [--freeze P,...] [--row-sigma S]
//   strata calibrate --from-log train.log --job args.sh --cluster C [--stack S] --out fitted.yaml
//       (--from-log / --job repeat in pairs; may be combined with --from-runs)
// fits the training-loss parameters to measured runs instead of measuring kernels
// (calibration/fit_runs.h) and writes the cluster's device with them.
//
// Works under mpirun (every rank measures; rank 0 prints and writes) and without it
// (a singleton MPI process). The procedure is calibration/calibrate.h; this file holds
// the flags and where the report and the profile go.
#include <cstdio>

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <utility>

#include "calibration/calibrate.h"
#include "calibration/fit_runs.h"
#include "calibration/measured_runs.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "common/output_file.h"
#include "common/atomic_file.h"
#include "common/errors.h"

namespace strata::cli {

namespace {

void run_calibrate(const calibration::CalibrationRequest& request) {
  calibration::CalibrationOutput io;
  io.check_out = [](const std::string& out) { check_output_path(out, "--out"); };
  io.emit = [&request](const std::string& report, const std::string& yaml) {
    // Profile to stdout ("-"): the report goes to stderr so the YAML stays clean.
    if (is_stdio(request.out)) {
      std::fputs(report.c_str(), stderr);
      write_output(request.out, yaml, "--out");
    } else {
      write_output(request.out, yaml, "--out");
      print_stdout(report);
    }
  };
  io.progress_tty = stderr_is_tty();
  calibration::calibrate(request, io);
}

struct FromRunsFlags {
  std::string runs;
  std::vector<std::string> logs, jobs;
  std::string cluster, stack, source = "training logs";
  std::vector<std::string> freeze;
  double row_sigma = 0.04;
  bool any() const { return !runs.empty() || !logs.empty() || !jobs.empty(); }
};

void run_from_runs(const FromRunsFlags& f, const std::string& out) {
  check_output_path(out, "--out");
  std::vector<calibration::MeasuredRun> runs;
  if (!f.runs.empty()) runs = calibration::load_measured_runs(f.runs);
  for (auto& r : calibration::runs_from_logs(f.logs, f.jobs, f.cluster, f.stack, f.source))
    runs.push_back(std::move(r));
  calibration::FitOptions o;
  o.freeze = f.freeze;
  o.row_sigma = f.row_sigma;
  if (stderr_is_tty()) o.progress = [](const std::string& s) { std::fprintf(stderr, "# %s\n", s.c_str()); };
  const calibration::FitResult fit = calibration::fit_training_losses(runs, o);
  const std::string what = f.runs.empty() ? "--from-log" : f.runs;
  const std::string yaml = calibration::fitted_profile_yaml(fit, runs.front().cluster.device, what);
  const std::string report = calibration::fit_report(fit) +
                             "# residuals entries (held-out rows; costmodel/stacks/residuals.yaml format):\n" +
                             calibration::residual_entries(fit);
  if (is_stdio(out)) {
    std::fputs(report.c_str(), stderr);
    write_output(out, yaml, "--out");
  } else {
    write_output(out, yaml, "--out");
    print_stdout(report + fmt::format("# profile written to {} (use it with --profile)\n", out));
  }
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto flags = std::make_shared<calibration::CalibrationRequest>();
  auto* cmd = app.add_subcommand(
      "calibrate", "Measure GEMM and collective kernels and write a measured device profile");
  add_files_help(*cmd, "--model (files, plan files, or catalog names), --from-runs, --from-log, --job, --cluster, --stack",
                 "--out (the profile YAML; - for stdout)");
  cmd->add_option("--backend", flags->backend, "Kernel backend: cpu (OpenBLAS + MPI) or cuda (cuBLASLt + NCCL)")
      ->capture_default_str();
  cmd->add_option("--out", flags->out, "Profile YAML to write (atomically), or - for stdout")->required();
  cmd->add_option("--model", flags->models,
                  "Model(s) whose sharded GEMM shapes to measure: catalog names, model files or plan "
                  "files (comma-separated)")
      ->delimiter(',');
  cmd->add_option("--tp-degrees", flags->tp_degrees, "Tensor-parallel degrees to shard the model's GEMMs for")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--micro-batch", flags->micro_batch, "Sequences per micro-batch (GEMM m = micro_batch * seq)")
      ->capture_default_str();
  cmd->add_flag("--quick", flags->quick,
                "Fewer repetitions, square GEMMs up to 1024, collectives up to 64 MiB");
  cmd->add_option("--max-bytes", flags->max_bytes,
                  "Largest collective message (bytes, or with K/M/G); default 1G (64M with --quick)");
  cmd->add_option("--max-gemm-dim", flags->max_gemm_dim,
                  "Largest square GEMM of the size sweep; default 4096 (1024 with --quick)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{65536}));
  cmd->add_option("--dtypes", flags->dtypes, "GEMM dtypes (cpu: fp32; cuda default: bf16,fp16,tf32,fp32)")
      ->delimiter(',');
  cmd->add_option("--format", flags->format, "Output format of the measurement tables")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  cmd->add_option("--name", flags->name, "Profile name (default: the --out file name without extension)");
  cmd->add_option("--sustain", flags->sustain_s,
                  "Seconds of back-to-back GEMMs before the GEMM rows are timed, so they are measured at the "
                  "clocks a device holds under sustained load (power and thermal limits) as in training; "
                  "e.g. 60 on a GPU (default 0: none)")
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--max-gemm-seconds", flags->max_gemm_seconds,
                  "Stop starting GEMM shapes after this many seconds (after --sustain): the profile keeps every "
                  "shape measured by then and says how many were skipped, so a bounded run (a lent GPU's "
                  "time) loses nothing (default 0: no bound)")
      ->check(CLI::Range(0.0, 86400.0));
  auto runs = std::make_shared<FromRunsFlags>();
  cmd->add_option("--from-runs", runs->runs,
                  "Fit the training-loss parameters to the measured runs in this file instead of measuring "
                  "kernels (calibration/measured_runs.h describes the format)");
  cmd->add_option("--from-log", runs->logs,
                  "Training log (Megatron-LM, Megatron-DeepSpeed, NeMo or TorchTitan format) whose step times to fit; pairs with --job")
      ->take_all();
  cmd->add_option("--job", runs->jobs, "Megatron-LM arguments (script or command line) of the job a --from-log log ran")
      ->take_all();
  cmd->add_option("--cluster", runs->cluster, "Cluster the --from-log jobs ran on (catalog name or file)");
  cmd->add_option("--stack", runs->stack, "Software stack of the --from-log jobs (default: the device's)");
  cmd->add_option("--source", runs->source, "Where the --from-log numbers come from (recorded in the profile)");
  cmd->add_option("--freeze", runs->freeze, "Training-loss parameters to hold at their prior (comma-separated)")
      ->delimiter(',');
  cmd->add_option("--row-sigma", runs->row_sigma,
                  "Scatter of log(predicted/measured) per run the parameters cannot explain (the residuals' weight)")
      ->check(CLI::Range(0.001, 1.0))
      ->capture_default_str();
  cmd->callback([flags, runs] {
    // CLI11's Range lets nan through (every comparison with it is false): refuse it by name.
    const std::pair<const char*, double> reals[] = {{"--sustain", flags->sustain_s},
                                                    {"--max-gemm-seconds", flags->max_gemm_seconds},
                                                    {"--row-sigma", runs->row_sigma}};
    for (const auto& [flag, v] : reals)
      if (!std::isfinite(v)) input_error("{} ({}) must be a finite number", flag, v);
    std::vector<PathFlag> inputs;
    for (const auto& m : flags->models) inputs.push_back({m, "--model"});
    inputs.push_back({runs->runs, "--from-runs"});
    for (const auto& l : runs->logs) inputs.push_back({l, "--from-log"});
    for (const auto& j : runs->jobs) inputs.push_back({j, "--job"});
    inputs.push_back({runs->cluster, "--cluster"});
    inputs.push_back({runs->stack, "--stack"});
    check_path_aliasing({{flags->out, "--out"}}, inputs);
    if (runs->any()) return run_from_runs(*runs, flags->out);
    run_calibrate(*flags);
  });
}

}  // namespace strata::cli
