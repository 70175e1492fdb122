// The preamble of the CPU kernel benchmarks' tables (strata_bench_gemm,
// strata_bench_collectives): which build ran them, when, where and on how many MPI ranks.
#pragma once
#include <string>

#include "kernels/cpu/mpi_placement.h"
#include "kernels/profiler/build_info.h"
#include "kernels/profiler/sweep_report.h"

namespace strata::bench {

inline kernels::profiler::RunContext cpu_run_context(const std::string& tool, const std::string& device,
                                                     const std::string& libraries,
                                                     const kernels::MpiPlacement& place) {
  namespace kp = kernels::profiler;
  kp::RunContext ctx;
  ctx.tool = tool;
  ctx.strata_version = kp::strata_version();
  ctx.commit = kp::build_commit();
  ctx.backend = "cpu";
  ctx.date = kp::utc_timestamp();
  ctx.transport = "mpi";
  ctx.device = device;
  ctx.host = place.host;
  ctx.libraries = libraries;
  ctx.ranks = place.world_size;
  ctx.nodes = place.nodes;
  return ctx;
}

}  // namespace strata::bench
