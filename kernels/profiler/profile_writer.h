// Writes a measured device profile in the format costmodel/device_profile.h documents
// (name, source, memory_gib, memory_bandwidth_gbps, peak_tflops, efficiency,
// reserve_gib, gemm_table, collective_table), with yaml-cpp's emitter. kernels does not
// link costmodel (layering): the format is the contract, and tests/kernels parses the
// output back with costmodel's parser to prove the round trip.
//
// Only validated rows go into the tables (a record with wrong elements or an error is
// left out); one-rank collective rows carry `trivial: true`.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "kernels/gemm_dtype.h"
#include "kernels/profiler/collective_sweep.h"
#include "kernels/profiler/gemm_sweep.h"

namespace strata::kernels::profiler {

struct ProfileInfo {
  std::string name;                      // profile name ("local-cpu-measured")
  std::vector<std::string> comments;     // header comment lines (without '#')
  // Provenance, in order: kind is always "measured"; tool, host, device, blas, mpi,
  // cuda, nccl, driver, date, commit, method, peak, ...
  std::vector<std::pair<std::string, std::string>> provenance;
  std::string compute_dtype;             // optional: dtype training runs in ("fp32", "bf16")
  double memory_gib = 0;                 // per rank
  double memory_bandwidth_gbps = 0;      // per rank
  std::vector<std::pair<GemmDType, double>> peak_tflops;  // per rank
  double gemm_efficiency = 0.8;
  double attention_efficiency = 0.5;
  double memory_efficiency = 1.0;
  // How the efficiencies were obtained (emitted as efficiency.source when non-empty).
  std::vector<std::pair<std::string, std::string>> efficiency_provenance;
  double reserve_gib = 0;
  // Where reserve_gib comes from (reserve_source; kind first, e.g. {"kind","estimate"}).
  std::vector<std::pair<std::string, std::string>> reserve_provenance;
  // Extra provenance for the two tables (merged over `provenance`).
  std::vector<std::pair<std::string, std::string>> gemm_provenance;
  std::vector<std::pair<std::string, std::string>> collective_provenance;
};

std::string profile_to_yaml(const ProfileInfo& info, const std::vector<GemmRecord>& gemms,
                            const std::vector<CollectiveRecord>& collectives);
// Atomic write (temp file + rename); InputError when the folder is missing or unwritable.
void write_profile(const std::string& path, const ProfileInfo& info,
                   const std::vector<GemmRecord>& gemms,
                   const std::vector<CollectiveRecord>& collectives);

// Median efficiency (achieved / peak) over the valid records of `dtype` with at least
// `min_flop` FLOPs (all valid records of that dtype when none is that large) whose
// origin contains `origin_filter` (any origin when empty); 0 if none.
double median_gemm_efficiency(const std::vector<GemmRecord>& gemms, GemmDType dtype,
                              double min_flop = 1e9, const std::string& origin_filter = "");

}  // namespace strata::kernels::profiler
