// GEMM efficiency of the cpu backend (OpenBLAS sgemm) vs this machine's fp32 peak,
// printed the nccl-tests way. Peak per rank = cores x GHz x FLOP/cycle, read from
// /proc/cpuinfo (see kernels/cpu/cpu_info.h for the FLOP/cycle rule).
//
//   strata_bench_gemm [max_dim]                 # one process, OpenBLAS default threads
//   mpirun -np 2 strata_bench_gemm [max_dim]    # one thread per rank, all ranks at once
//
// Shapes: square 64..max_dim (default 2048) and the sharded layer GEMMs of gpt2-124m
// (forward, dgrad, wgrad at tp 1 and 2). Figures only: never pass/fail.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/bench_context.h"
#include "kernels/cpu/blas_library.h"
#include "kernels/cpu/cpu_info.h"
#include "kernels/cpu/mpi_communicator.h"
#include "kernels/cpu/mpi_placement.h"
#include "kernels/profiler/build_info.h"
#include "kernels/profiler/cpu_gemm_runner.h"
#include "kernels/profiler/gemm_problems.h"
#include "kernels/profiler/gemm_sweep.h"
#include "kernels/profiler/sweep_report.h"
#include "models/model_graph.h"
#include "models/model_spec.h"

namespace kp = strata::kernels::profiler;

int main(int argc, char** argv) {
  namespace k = strata::kernels;
  try {
    k::mpi_init_once(&argc, &argv);
    const long max_dim = argc > 1 ? std::atol(argv[1]) : 2048;
    const k::MpiPlacement place = k::mpi_placement();
    const int threads = k::configure_blas_threads(place.local_size);
    auto world = k::MpiCommunicator::world();
    const k::CpuInfo cpu = k::read_cpu_info();
    const int cores = std::max(1, std::min(threads, cpu.logical_cpus));
    kp::CpuGemmRunner runner(cpu.model_name, cores * cpu.peak_gflops_per_core() / 1000.0);

    auto problems = kp::square_gemm_problems(64, max_dim);
    auto graph = strata::models::ModelGraph::build(strata::models::load_model("gpt2-124m"), 1);
    auto layer = kp::model_gemm_problems(graph, {1, 2});
    problems.insert(problems.end(), layer.begin(), layer.end());
    problems = kp::dedupe_gemm_problems(problems);

    kp::GemmSweepOptions opt;
    opt.timing = {2, 3, 20, 0.3};
    auto recs = kp::run_gemm_sweep(runner, problems, opt, world.get());

    kp::RunContext ctx = strata::bench::cpu_run_context("strata_bench_gemm", cpu.model_name, k::blas_version(), place);
    ctx.blas_threads = threads;
    ctx.peak = cpu.peak_derivation(cores);
    ctx.gemm_timing = opt.timing;
    if (place.world_rank == 0) {
      std::string table = kp::format_gemm_table(ctx, recs);
      std::fputs(table.c_str(), stdout);
      std::printf("# origins of the model shapes:\n");
      for (const auto& r : recs)
        if (r.origin != "square") std::printf("#   %ldx%ldx%ld: %s\n", long(r.m), long(r.n), long(r.k), r.origin.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
