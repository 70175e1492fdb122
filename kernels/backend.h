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

// A send in flight (Communicator::isend). The sender keeps the buffer alive until
// done() or wait() says it completed. Destroying an unfinished send does not wait: the
// message still goes out (or is lost with a dead peer), and nothing blocks.
class PendingSend {
 public:
  virtual ~PendingSend() = default;
  virtual bool done() = 0;   // true once the buffer may be reused
  virtual void wait() = 0;   // blocks until then
};

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
  virtual void broadcast(float* data, std::size_t count, int root) = 0;
  virtual void send(const float* data, std::size_t count, int peer) = 0;
  virtual void recv(float* data, std::size_t count, int peer) = 0;
  // Starts a send and returns without waiting for the receiver, so a pipeline stage
  // computes on while its output travels (messages to one peer arrive in send order).
  // The default sends at once (blocking) and returns a completed handle.
  virtual std::unique_ptr<PendingSend> isend(const float* data, std::size_t count, int peer);
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
