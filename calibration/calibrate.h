// Calibration: the procedure behind `strata calibrate` that turns measurements into a
// device profile (costmodel/device_profile.h format). It checks the request, sweeps the
// GEMMs a model's sharded layers run (plus squares) and the collectives of every group
// size the ranks can form, measures copy bandwidth and, on the cpu backend with a model,
// times the runtime's own non-GEMM kernels (op_benchmark.h: op_table) and whole
// transformer blocks (block_benchmark.h: block_table); then it derives efficiencies,
// records where every number came from and renders the nccl-tests style report and the
// profile YAML. Runs on every MPI rank at once (a singleton MPI process without mpirun);
// rank 0 reports. Where the text goes (files, stdout) is the caller's business.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace strata::calibration {

// What to measure, as `strata calibrate`'s flags give it; checked by calibrate().
struct CalibrationRequest {
  std::string backend = "cpu";         // cpu | cuda
  std::string out;                     // profile path ("-": stdout), for the report and provenance
  std::vector<std::string> models;     // catalog names, model files or plan files: the shapes to measure
  std::vector<int> tp_degrees{1, 2, 4, 8};
  std::int64_t micro_batch = 1;
  bool quick = false;
  std::string max_bytes;               // largest collective ("64M"); empty: default
  std::int64_t max_gemm_dim = 0;       // largest square GEMM; 0: default
  std::vector<std::string> dtypes;     // GEMM dtypes; empty: the backend's
  std::string format = "table";        // report: table | json
  std::string name;                    // profile name; empty: from `out`
  double sustain_s = 0;                // seconds of GEMM load before the GEMM rows (TimingOptions)
  double max_gemm_seconds = 0;         // bound on the GEMM shapes' time (GemmSweepOptions::budget_s); 0: none
};

// The caller's side of the procedure.
struct CalibrationOutput {
  // Called during the input checks, before MPI starts and before anything is measured:
  // throws (InputError) when `out` cannot be written.
  std::function<void(const std::string& out)> check_out;
  // Rank 0 only, once measured: the report (table or JSON) and the profile YAML to write.
  std::function<void(const std::string& report, const std::string& profile_yaml)> emit;
  // Progress on stderr is a bar redrawn in place (a terminal) rather than lines.
  bool progress_tty = false;
};

// The whole procedure. InputError before measuring on bad input (identical on every
// rank); DeviceError when measurements failed validation (they are left out of the
// profile, which is still written); ReportedByAnotherRank on the ranks that only fail
// with rank 0.
void calibrate(const CalibrationRequest& request, const CalibrationOutput& output);

}  // namespace strata::calibration
