// The steps of the calibration procedure (calibrate.h), private to strata_calibration:
//   plan_sweep      (sweep_plan.cpp)          input checks and the GEMM shapes to sweep, on
//                                             every rank before MPI starts;
//   measure         (measure.cpp)             MPI, the device and its libraries, then the
//                                             GEMM, bandwidth and collective sweeps and the
//                                             runtime's op and block benchmarks;
//   derive_efficiencies (efficiencies.cpp)    rank 0: the profile's compute dtype, peaks
//                                             and efficiencies from the measurements;
//   write_profile   (write_profile.cpp)       rank 0: provenance, the report and the profile
//                                             YAML, handed to the caller.
// calibrate() (calibrate.cpp) runs them in that order and agrees the outcome over the ranks.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "calibration/block_benchmark.h"
#include "calibration/calibrate.h"
#include "calibration/op_benchmark.h"
#include "kernels/backend.h"
#include "kernels/cpu/mpi_communicator.h"
#include "kernels/cpu/mpi_placement.h"
#include "kernels/profiler/collective_sweep.h"
#include "kernels/profiler/gemm_problems.h"
#include "kernels/profiler/gemm_sweep.h"
#include "kernels/profiler/memory_bandwidth.h"
#include "kernels/profiler/profile_writer.h"
#include "kernels/profiler/sweep_report.h"
#include "kernels/profiler/timing.h"
#include "models/model_graph.h"

namespace strata::calibration::detail {

// What to measure, checked: the same on every rank.
struct SweepPlan {
  kernels::Backend backend = kernels::Backend::Cpu;
  std::int64_t max_bytes = 0;                         // largest collective
  std::int64_t max_dim = 0;                           // largest square GEMM
  std::vector<kernels::GemmDType> dtypes;             // GEMM dtypes
  std::vector<models::ModelGraph> graphs;             // of the --model shapes
  std::vector<kernels::profiler::GemmProblem> problems;  // GEMMs to sweep, deduplicated
};

// Everything measured, with where and how (ctx, info, libs); rows on rank 0.
struct Measurements {
  std::string load_before;  // 1-minute load average before MPI started
  kernels::MpiPlacement place;
  bool root = false;  // world rank 0: reports and writes
  std::unique_ptr<kernels::MpiCommunicator> world;
  kernels::profiler::TimingOptions gemm_timing, coll_timing;
  kernels::profiler::RunContext ctx;
  kernels::profiler::ProfileInfo info;
  std::vector<std::pair<std::string, std::string>> libs;  // library name, version
  std::vector<kernels::profiler::GemmRecord> gemms;
  kernels::profiler::BandwidthRecord bw;
  std::vector<kernels::profiler::CollectiveRecord> collectives;
  OpBenchmarkOptions ops_options;
  std::vector<OpBenchmarkRow> op_rows;
  BlockBenchmarkOptions blocks_options;  // tp_group and sync cleared after use
  std::vector<BlockBenchmarkRow> block_rows;
  std::vector<std::string> block_skipped;
};

SweepPlan plan_sweep(const CalibrationRequest& request, const CalibrationOutput& output);
Measurements measure(const CalibrationRequest& request, const CalibrationOutput& output, const SweepPlan& plan);
// Rank 0: fills m.info's compute dtype, peaks (when no datasheet gave them) and
// efficiencies with their provenance; may set the GEMM rows' efficiency.
void derive_efficiencies(const SweepPlan& plan, Measurements& m);
// Rank 0: the profile's provenance, the report and the YAML, handed to output.emit; the
// failed rows said on stderr.
void write_profile(const CalibrationRequest& request, const CalibrationOutput& output, const SweepPlan& plan,
                   Measurements& m);

// "a, b" of v.
std::string join(const std::vector<std::string>& v, const char* sep);
// 1-minute load average (/proc/loadavg), recorded so a reader of the profile can tell
// whether other work competed for the cores while it was measured.
std::string load_average();

}  // namespace strata::calibration::detail
