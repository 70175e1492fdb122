// main() for GoogleTest binaries run under mpirun: MPI is initialized before the
// tests and finalized after; only rank 0 prints results (every rank still reports a
// failure through its exit code, which mpirun passes on).
#include <gtest/gtest.h>

#include "kernels/cpu/mpi_communicator.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  strata::kernels::mpi_init_once(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int rc = RUN_ALL_TESTS();
  // A failure on any rank fails every rank.
  int any = rc != 0 ? 1 : 0, all = 0;
  MPI_Allreduce(&any, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return all;
}
