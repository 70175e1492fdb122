// MpiCommunicator: Communicator over an MPI communicator (CPU backend). Errors on
// the communicator return (MPI_ERRORS_RETURN) and become DeviceError, so a dead peer
// ends the job with a message instead of a hang or abort.
#pragma once
#include <mpi.h>

#include <memory>
#include <vector>

#include "kernels/backend.h"

namespace strata::kernels {

// Initializes MPI once (thread level FUNNELED) and finalizes at exit; safe to call twice.
void mpi_init_once(int* argc, char*** argv);
bool mpi_initialized();
// Every rank of a launched job waits here for the others (MPI initialised if it is not
// yet): for an error all ranks hit alike, so that rank 0 has printed it before any rank
// exits (mpirun ends the job at the first non-zero exit). A no-op for one rank; gives up
// quietly when MPI cannot start.
void mpi_world_barrier_best_effort();
// This process' rank in an MPI job, from the launcher's environment (Open MPI's mpirun,
// PMIx or PMI launchers such as srun / MPICH's hydra), without calling MPI: it may not be
// initialised, or may be what failed. -1 outside a launcher.
int launcher_rank_or_none();

class MpiCommunicator : public Communicator {
 public:
  // Takes ownership of `comm` (frees it unless it is MPI_COMM_WORLD).
  explicit MpiCommunicator(MPI_Comm comm);
  ~MpiCommunicator() override;
  static std::unique_ptr<MpiCommunicator> world();
  // New communicator over `ranks` (world ranks, in order); every world rank must call
  // with its own group's list (MPI_Comm_split by color). `groups` may list every group
  // (a partition of the world) or only the caller's own; the caller's rank in the new
  // communicator is its position in its group. Returns nullptr for a rank in no group.
  // Collective over MPI_COMM_WORLD.
  static std::unique_ptr<MpiCommunicator> from_groups(const std::vector<std::vector<int>>& groups);

  MPI_Comm comm() const { return comm_; }
  int rank() const override;
  int size() const override;
  void all_reduce_sum(float* data, std::size_t count) override;
  void all_gather(const float* send, float* recv, std::size_t count_per_rank) override;
  void reduce_scatter_sum(const float* send, float* recv, std::size_t count_per_rank) override;
  void all_to_all(const float* send, float* recv, std::size_t count_per_rank) override;
  void all_to_all_v(const float* send, const std::vector<std::size_t>& send_counts, float* recv,
                    const std::vector<std::size_t>& recv_counts) override;
  void broadcast(float* data, std::size_t count, int root) override;
  void send(const float* data, std::size_t count, int peer) override;
  void recv(float* data, std::size_t count, int peer) override;
  std::unique_ptr<PendingRequest> isend(const float* data, std::size_t count, int peer) override;
  std::unique_ptr<PendingRequest> iall_reduce_sum(float* data, std::size_t count) override;
  std::unique_ptr<PendingRequest> ireduce_scatter_sum(const float* send, float* recv,
                                                      const std::vector<std::size_t>& counts) override;
  std::unique_ptr<PendingRequest> iall_gather(const float* send, float* recv,
                                              const std::vector<std::size_t>& counts) override;
  void barrier() override;
  void send_recv(const float* send_buf, int dst, float* recv_buf, int src,
                 std::size_t count) override;
  const char* transport() const override { return "mpi"; }

 private:
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

}  // namespace strata::kernels
