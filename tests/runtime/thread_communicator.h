// An in-process Communicator for unit tests: N threads of one process act as N ranks
// and run the collectives over shared memory (sums in rank order). Lets the tensor-
// parallel math be checked against one rank without MPI.
#pragma once
#include <barrier>
#include <stdexcept>
#include <vector>

#include "kernels/backend.h"

namespace strata::runtime::testing {

class ThreadGroup {
 public:
  explicit ThreadGroup(int n) : n_(n), barrier_(n), ptrs_(static_cast<std::size_t>(n)) {}
  int size() const { return n_; }
  std::barrier<>& barrier() { return barrier_; }
  std::vector<const float*>& ptrs() { return ptrs_; }

 private:
  int n_;
  std::barrier<> barrier_;
  std::vector<const float*> ptrs_;
};

class ThreadCommunicator : public kernels::Communicator {
 public:
  ThreadCommunicator(ThreadGroup& g, int rank) : g_(g), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return g_.size(); }
  void all_reduce_sum(float* data, std::size_t count) override {
    publish(data);
    std::vector<float> sum(count, 0.0f);
    for (int r = 0; r < g_.size(); ++r)
      for (std::size_t i = 0; i < count; ++i) sum[i] += peer(r)[i];
    g_.barrier().arrive_and_wait();
    std::copy(sum.begin(), sum.end(), data);
    g_.barrier().arrive_and_wait();
  }
  void all_gather(const float* send, float* recv, std::size_t n) override {
    std::vector<float> mine(send, send + n);
    publish(mine.data());
    for (int r = 0; r < g_.size(); ++r) std::copy_n(peer(r), n, recv + static_cast<std::size_t>(r) * n);
    g_.barrier().arrive_and_wait();
  }
  void reduce_scatter_sum(const float* send, float* recv, std::size_t n) override {
    publish(send);
    std::vector<float> sum(n, 0.0f);
    for (int r = 0; r < g_.size(); ++r)
      for (std::size_t i = 0; i < n; ++i) sum[i] += peer(r)[static_cast<std::size_t>(rank_) * n + i];
    g_.barrier().arrive_and_wait();
    std::copy(sum.begin(), sum.end(), recv);
    g_.barrier().arrive_and_wait();
  }
  void all_to_all(const float*, float*, std::size_t) override { unsupported(); }
  void broadcast(float*, std::size_t, int) override { unsupported(); }
  void send(const float*, std::size_t, int) override { unsupported(); }
  void recv(float*, std::size_t, int) override { unsupported(); }
  void barrier() override { g_.barrier().arrive_and_wait(); }

 private:
  void publish(const float* p) {
    g_.ptrs()[static_cast<std::size_t>(rank_)] = p;
    g_.barrier().arrive_and_wait();
  }
  const float* peer(int r) { return g_.ptrs()[static_cast<std::size_t>(r)]; }
  [[noreturn]] static void unsupported() { throw std::logic_error("not supported in tests"); }
  ThreadGroup& g_;
  int rank_;
};

}  // namespace strata::runtime::testing
