// Renders sweep results the nccl-tests way (STYLE lesson 5): a `#` preamble with the
// whole setup, a header row and a units row, one row per measurement, `#` footer
// lines; and the same records as JSON (schema_version 1). These return text and never
// print: `strata calibrate` and bench/ decide where it goes.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/profiler/collective_sweep.h"
#include "kernels/profiler/gemm_sweep.h"
#include "kernels/profiler/memory_bandwidth.h"

namespace strata::kernels::profiler {

struct RunContext {
  std::string tool = "strata calibrate";
  std::string strata_version;   // "0.1.0"
  std::string commit;           // git describe at build time, or "unknown"
  std::string backend;          // "cpu" | "cuda"
  std::string transport;        // "mpi" | "nccl"
  std::string device;           // CPU model name / GPU name
  std::string host;
  std::string libraries;        // "OpenBLAS ...; Open MPI v4.1.4"
  std::string date;             // ISO 8601 UTC
  std::string load_average;     // 1-minute load when the run started ("" if unknown)
  int ranks = 1;
  int nodes = 1;
  int blas_threads = 1;         // per rank (cpu)
  std::string peak;             // how the GEMM peak was derived
  TimingOptions gemm_timing;
  TimingOptions collective_timing;
};

std::string format_gemm_table(const RunContext& ctx, const std::vector<GemmRecord>& records);
std::string format_collective_table(const RunContext& ctx, const std::vector<CollectiveRecord>& records);

nlohmann::json to_json(const RunContext& ctx);
nlohmann::json to_json(const GemmRecord& r);
nlohmann::json to_json(const CollectiveRecord& r);
nlohmann::json to_json(const BandwidthRecord& r);
// {"schema_version": 1, "context": {...}, "gemm": [...], "collectives": [...],
//  "memory_bandwidth": {...} (when given)}
nlohmann::json sweep_json(const RunContext& ctx, const std::vector<GemmRecord>& gemms,
                          const std::vector<CollectiveRecord>& collectives,
                          const std::optional<BandwidthRecord>& bandwidth);

// Current time as ISO 8601 UTC ("2025-12-02T17:16:19Z"), for RunContext::date.
std::string utc_timestamp();

// "1 KiB", "64 MiB", "8 B" for sizes that are powers of two; plain bytes otherwise.
std::string human_bytes(std::int64_t bytes);

}  // namespace strata::kernels::profiler
