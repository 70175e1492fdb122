// NcclCommunicator: Communicator over NCCL (cuda backend). Buffers are device pointers
// on this rank's device. The NCCL communicator is bootstrapped over MPI: rank 0 of the
// given MPI communicator creates the unique id, MPI_Bcast shares it, every rank calls
// ncclCommInitRank. Each call is issued on the communicator's stream and waited for
// (the Communicator contract is blocking).
#pragma once
#include <cuda_runtime_api.h>

#include <memory>

#include "kernels/backend.h"
#include "kernels/cpu/mpi_communicator.h"

struct ncclComm;

namespace strata::kernels {

class NcclCommunicator : public Communicator {
 public:
  // Collective over `bootstrap`'s ranks; `device` is this rank's CUDA device
  // (mpi_placement().local_rank % cuda_device_count() is the usual choice).
  NcclCommunicator(const MpiCommunicator& bootstrap, int device);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  void all_reduce_sum(float* data, std::size_t count) override;
  void all_gather(const float* send, float* recv, std::size_t count_per_rank) override;
  void reduce_scatter_sum(const float* send, float* recv, std::size_t count_per_rank) override;
  void all_to_all(const float* send, float* recv, std::size_t count_per_rank) override;
  // Uneven counts: one grouped ncclReduce per root (NCCL's reduce-scatter is even only).
  // Blocking, like the rest of this class.
  std::unique_ptr<PendingRequest> ireduce_scatter_sum(const float* send, float* recv,
                                                      const std::vector<std::size_t>& counts) override;
  void broadcast(float* data, std::size_t count, int root) override;
  void send(const float* data, std::size_t count, int peer) override;
  void recv(float* data, std::size_t count, int peer) override;
  void barrier() override;
  void send_recv(const float* send_buf, int dst, float* recv_buf, int src, std::size_t count) override;
  const char* transport() const override { return "nccl"; }

 private:
  void wait();
  ncclComm* comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  MPI_Comm mpi_ = MPI_COMM_NULL;  // the bootstrap communicator (not owned), for barrier()
  int rank_ = 0, size_ = 1, device_ = 0;
};

}  // namespace strata::kernels
