#include "kernels/cuda/nccl_communicator.h"

#include <nccl.h>

#include "common/errors.h"
#include "kernels/cpu/detail/mpi_check.h"
#include "kernels/cuda/device_check.h"

namespace strata::kernels {

NcclCommunicator::NcclCommunicator(const MpiCommunicator& bootstrap, int device)
    : mpi_(bootstrap.comm()), rank_(bootstrap.rank()), size_(bootstrap.size()), device_(device) {
  STRATA_CUDA_CHECK(cudaSetDevice(device_));
  ncclUniqueId id{};
  if (rank_ == 0) STRATA_NCCL_CHECK(ncclGetUniqueId(&id));
  STRATA_MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, mpi_));
  STRATA_NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_));
  STRATA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

NcclCommunicator::~NcclCommunicator() {
  if (stream_) cudaStreamDestroy(stream_);
  if (comm_) ncclCommDestroy(comm_);
}

void NcclCommunicator::wait() { STRATA_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

void NcclCommunicator::all_reduce_sum(float* data, std::size_t count) {
  STRATA_NCCL_CHECK(ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm_, stream_));
  wait();
}

void NcclCommunicator::all_gather(const float* send, float* recv, std::size_t count_per_rank) {
  STRATA_NCCL_CHECK(ncclAllGather(send, recv, count_per_rank, ncclFloat, comm_, stream_));
  wait();
}

void NcclCommunicator::reduce_scatter_sum(const float* send, float* recv, std::size_t count_per_rank) {
  STRATA_NCCL_CHECK(ncclReduceScatter(send, recv, count_per_rank, ncclFloat, ncclSum, comm_, stream_));
  wait();
}

std::unique_ptr<PendingRequest> NcclCommunicator::ireduce_scatter_sum(
    const float* send, float* recv, const std::vector<std::size_t>& counts) {
  STRATA_CHECK(counts.size() == static_cast<std::size_t>(size_),
               "reduce-scatter with {} counts on a group of {}", counts.size(), size_);
  STRATA_NCCL_CHECK(ncclGroupStart());
  std::size_t offset = 0;
  for (int root = 0; root < size_; ++root) {
    const std::size_t n = counts[static_cast<std::size_t>(root)];
    if (n > 0)
      STRATA_NCCL_CHECK(ncclReduce(send + offset, root == rank_ ? recv : nullptr, n, ncclFloat,
                                   ncclSum, root, comm_, stream_));
    offset += n;
  }
  STRATA_NCCL_CHECK(ncclGroupEnd());
  wait();
  return completed_request();
}

void NcclCommunicator::all_to_all(const float* send, float* recv, std::size_t count_per_rank) {
  STRATA_NCCL_CHECK(ncclGroupStart());
  for (int peer = 0; peer < size_; ++peer) {
    const std::size_t off = static_cast<std::size_t>(peer) * count_per_rank;
    STRATA_NCCL_CHECK(ncclSend(send + off, count_per_rank, ncclFloat, peer, comm_, stream_));
    STRATA_NCCL_CHECK(ncclRecv(recv + off, count_per_rank, ncclFloat, peer, comm_, stream_));
  }
  STRATA_NCCL_CHECK(ncclGroupEnd());
  wait();
}

void NcclCommunicator::broadcast(float* data, std::size_t count, int root) {
  STRATA_NCCL_CHECK(ncclBroadcast(data, data, count, ncclFloat, root, comm_, stream_));
  wait();
}

void NcclCommunicator::send(const float* data, std::size_t count, int peer) {
  STRATA_NCCL_CHECK(ncclSend(data, count, ncclFloat, peer, comm_, stream_));
  wait();
}

void NcclCommunicator::recv(float* data, std::size_t count, int peer) {
  STRATA_NCCL_CHECK(ncclRecv(data, count, ncclFloat, peer, comm_, stream_));
  wait();
}

void NcclCommunicator::send_recv(const float* send_buf, int dst, float* recv_buf, int src, std::size_t count) {
  STRATA_NCCL_CHECK(ncclGroupStart());
  STRATA_NCCL_CHECK(ncclSend(send_buf, count, ncclFloat, dst, comm_, stream_));
  STRATA_NCCL_CHECK(ncclRecv(recv_buf, count, ncclFloat, src, comm_, stream_));
  STRATA_NCCL_CHECK(ncclGroupEnd());
  wait();
}

void NcclCommunicator::barrier() {
  wait();
  STRATA_MPI_CHECK(MPI_Barrier(mpi_));
}

}  // namespace strata::kernels
