// The kernel interface shared by the runtime and the profiler: dense GEMM and the
// collectives on a group of ranks. Two backends: cpu (OpenBLAS + MPI) and cuda
// (cuBLASLt + NCCL, built when a CUDA toolkit is found). fp32 buffers in the runtime;
// the profiler also times other dtypes through the backend-specific entry points.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace strata::kernels {

enum class Backend { Cpu, Cuda };
const char* to_string(Backend b);
Backend backend_from_string(const std::string& s);  // InputError: "unknown backend 'x' (cpu, cuda)"
bool backend_available(Backend b);                   // cuda: built with CUDA

// Row-major single-precision GEMM on host memory:
// C(m,n) = alpha * op(A)(m,k) * op(B)(k,n) + beta * C, op = transpose when trans_*.
void gemm_f32(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
              const float* a, const float* b, float beta, float* c);

// A non-blocking operation in flight (Communicator::isend, iall_reduce_sum,
// ireduce_scatter_sum). The caller keeps its buffers alive and untouched until done() or
// wait() says it completed; done() also lets the transport make progress (MPI moves a
// non-blocking collective forward only inside MPI calls). Destroying an unfinished
// request does not wait: nothing blocks in a destructor.
class PendingRequest {
 public:
  virtual ~PendingRequest() = default;
  virtual bool done() = 0;   // true once the buffers may be used again
  virtual void wait() = 0;   // blocks until then
};
// A request that finished before it was returned (blocking fallbacks).
std::unique_ptr<PendingRequest> completed_request();

// A group of ranks that can run collectives. Element type is fp32 (runtime); the byte
// variants move raw bytes (profiler sweeps). All calls are blocking.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void all_reduce_sum(float* data, std::size_t count) = 0;
  virtual void all_gather(const float* send, float* recv, std::size_t count_per_rank) = 0;
  virtual void reduce_scatter_sum(const float* send, float* recv, std::size_t count_per_rank) = 0;
  virtual void all_to_all(const float* send, float* recv, std::size_t count_per_rank) = 0;
  // All-to-all with a count per peer (MPI_Alltoallv): send_counts[r] floats go to rank r,
  // taken from `send` in rank order; recv_counts[r] floats arrive from rank r, placed in
  // `recv` in rank order. Every rank's recv_counts[r] must equal rank r's send_counts[me]
  // (exchange the counts first). The default posts every send non-blocking, then receives
  // in rank order; it needs a transport whose isend does not wait for the receiver.
  virtual void all_to_all_v(const float* send, const std::vector<std::size_t>& send_counts,
                            float* recv, const std::vector<std::size_t>& recv_counts);
  virtual void broadcast(float* data, std::size_t count, int root) = 0;
  virtual void send(const float* data, std::size_t count, int peer) = 0;
  virtual void recv(float* data, std::size_t count, int peer) = 0;
  // Starts a send and returns without waiting for the receiver, so a pipeline stage
  // computes on while its output travels (messages to one peer arrive in send order).
  // The default sends at once (blocking) and returns a completed handle.
  virtual std::unique_ptr<PendingRequest> isend(const float* data, std::size_t count, int peer);
  // Non-blocking all-reduce in place, for gradient buckets reduced while the backward
  // pass goes on. Every rank issues its non-blocking collectives in the same order. The
  // default reduces at once (blocking) and returns a completed request.
  virtual std::unique_ptr<PendingRequest> iall_reduce_sum(float* data, std::size_t count);
  // Non-blocking reduce-scatter with a count per rank: rank r receives, in `recv`, the
  // sum over ranks of send[o_r, o_r + counts[r]) with o_r = counts[0] + ... + counts[r-1]
  // (ZeRO-1 buckets cut across the shard boundaries). `send` and `recv` must not overlap.
  // The default is blocking and works on host memory (one all-reduce of a copy); a
  // transport whose buffers live on a device overrides it.
  virtual std::unique_ptr<PendingRequest> ireduce_scatter_sum(const float* send, float* recv,
                                                              const std::vector<std::size_t>& counts);
  // Non-blocking all-gather with a count per rank: `recv` receives every rank's `send`
  // (counts[r] values from rank r) concatenated in rank order, so a ZeRO-3 layer whose
  // range cuts across the shard boundaries is gathered straight into one buffer. The
  // default is blocking and works on host memory (one all-reduce of a zero-filled copy).
  virtual std::unique_ptr<PendingRequest> iall_gather(const float* send, float* recv,
                                                      const std::vector<std::size_t>& counts);
  virtual void barrier() = 0;
  // Sends `count` floats to `dst` while receiving `count` floats from `src` (a ring
  // shift when dst = rank+1, src = rank-1), without deadlock. The default pairs
  // blocking send/recv by rank parity; backends override it with a fused call.
  virtual void send_recv(const float* send_buf, int dst, float* recv_buf, int src,
                         std::size_t count);
  // Short name of the transport ("mpi", "nccl") for tables and provenance.
  virtual const char* transport() const { return "unknown"; }
};

}  // namespace strata::kernels
