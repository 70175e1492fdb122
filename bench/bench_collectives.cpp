// MPI collective bus bandwidth vs message size on the cpu backend, printed like
// nccl-tests (size, count, type, collective, ranks, time, algbw, busbw, #wrong; busbw
// factors in the preamble), for the whole world and every power-of-two sub-group.
//
//   mpirun -np 2 strata_bench_collectives [max_bytes]     # default 64 MiB
//
// Figures only: never pass/fail.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/bench_context.h"
#include "kernels/cpu/blas_library.h"
#include "kernels/cpu/cpu_info.h"
#include "kernels/cpu/mpi_communicator.h"
#include "kernels/cpu/mpi_placement.h"
#include "kernels/memory_space.h"
#include "kernels/profiler/build_info.h"
#include "kernels/profiler/collective_sweep.h"
#include "kernels/profiler/sweep_report.h"

namespace kp = strata::kernels::profiler;

int main(int argc, char** argv) {
  namespace k = strata::kernels;
  try {
    k::mpi_init_once(&argc, &argv);
    const long long max_bytes = argc > 1 ? std::atoll(argv[1]) : (64ll << 20);
    const k::MpiPlacement place = k::mpi_placement();
    auto world = k::MpiCommunicator::world();
    auto mem = k::host_memory();
    kp::CollectiveSweepOptions opt;
    opt.max_bytes = max_bytes;
    std::vector<kp::CollectiveRecord> all;
    std::vector<int> sizes{place.world_size};
    for (int g = 2; g < place.world_size; g *= 2)
      if (place.world_size % g == 0) sizes.push_back(g);
    for (int g : sizes) {
      std::vector<std::vector<int>> groups;
      for (int s = 0; s < place.world_size; s += g) {
        groups.emplace_back();
        for (int r = s; r < s + g; ++r) groups.back().push_back(r);
      }
      auto sub = k::MpiCommunicator::from_groups(groups);
      opt.groups = place.world_size / g;
      auto recs = kp::run_collective_sweep(*sub, *mem, *sub, opt);
      all.insert(all.end(), recs.begin(), recs.end());
      world->barrier();
    }
    kp::RunContext ctx = strata::bench::cpu_run_context("strata_bench_collectives", k::read_cpu_info().model_name,
                                                        k::mpi_library_version(), place);
    ctx.blas_threads = k::blas_threads();
    ctx.collective_timing = opt.timing;
    if (place.world_rank == 0) std::fputs(kp::format_collective_table(ctx, all).c_str(), stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
