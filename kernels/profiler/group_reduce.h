// Small reductions over a Communicator built from all_gather, so the sweeps (and the
// calibrate benchmarks that agree on repetition counts) work on
// any backend's host-side group (the MPI communicator the ranks share).
#pragma once
#include <vector>

#include "kernels/backend.h"

namespace strata::kernels::profiler {

// Values of every rank, in rank order ({value} when `comm` is null).
std::vector<double> gather_all(Communicator* comm, double value);
double max_over_ranks(Communicator* comm, double value);
double sum_over_ranks(Communicator* comm, double value);

}  // namespace strata::kernels::profiler
