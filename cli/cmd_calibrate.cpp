// `strata calibrate`: measures the GEMMs a model's sharded layers run and the
// collectives of every group size available, prints them the nccl-tests way and
// writes a measured device profile (costmodel/device_profile.h format).
//
//   strata calibrate --backend cpu|cuda --out profile.yaml [--model M[,M2]]
//       [--tp-degrees 1,2,4,8] [--micro-batch B] [--quick] [--max-bytes N]
//       [--max-gemm-dim D] [--dtypes bf16,fp32] [--format table|json] [--name NAME]
//
// Works under mpirun (every rank measures; rank 0 prints and writes) and without it
// (a singleton MPI process). The procedure is calibration/calibrate.h; this file holds
// the flags and where the report and the profile go.
#include <cstdio>
#include <memory>

#include "calibration/calibrate.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "common/atomic_file.h"

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

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto flags = std::make_shared<calibration::CalibrationRequest>();
  auto* cmd = app.add_subcommand(
      "calibrate", "Measure GEMM and collective kernels and write a measured device profile");
  cmd->add_option("--backend", flags->backend, "Kernel backend: cpu (OpenBLAS + MPI) or cuda (cuBLASLt + NCCL)")
      ->capture_default_str();
  cmd->add_option("--out", flags->out, "Profile YAML to write (atomically), or - for stdout")->required();
  cmd->add_option("--model", flags->models,
                  "Model(s) whose sharded GEMM shapes to measure: catalog names or files (comma-separated)")
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
                  "Largest square GEMM of the size sweep; default 4096 (1024 with --quick)");
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
  cmd->callback([flags] { run_calibrate(*flags); });
}

}  // namespace strata::cli
