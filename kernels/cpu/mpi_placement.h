// MpiPlacement: where this process sits (world rank, rank on its node, node count)
// and which MPI library carries the job. Used for the NCCL device choice, the BLAS
// thread policy and the "ranks x nodes" line of calibration output.
#pragma once
#include <string>

namespace strata::kernels {

struct MpiPlacement {
  int world_rank = 0;
  int world_size = 1;
  int local_rank = 0;   // rank among the processes sharing this node's memory
  int local_size = 1;
  int nodes = 1;        // distinct shared-memory nodes in the world
  std::string host;     // MPI_Get_processor_name
};

// Collective over MPI_COMM_WORLD (every rank must call it). MPI must be initialized.
MpiPlacement mpi_placement();
// MPI_Get_library_version, first line ("Open MPI v4.1.4, package: ...").
std::string mpi_library_version();

}  // namespace strata::kernels
