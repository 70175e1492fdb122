// An in-process Communicator for unit tests: N threads of one process act as N ranks
// and run the collectives over shared memory (sums in rank order). Lets the tensor-
// parallel math be checked against one rank without MPI.
#pragma once
#include <algorithm>
#include <barrier>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
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
  void post(int src, int dst, std::vector<float> v) {
    std::lock_guard<std::mutex> lock(mu_);
    boxes_[{src, dst}].push_back(std::move(v));
    cv_.notify_all();
  }
  std::vector<float> take(int src, int dst) {
    std::unique_lock<std::mutex> lock(mu_);
    auto& q = boxes_[{src, dst}];
    cv_.wait(lock, [&] { return !q.empty(); });
    std::vector<float> v = std::move(q.front());
    q.pop_front();
    return v;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<int, int>, std::deque<std::vector<float>>> boxes_;
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
  void broadcast(float* data, std::size_t n, int root) override {
    publish(data);
    std::vector<float> v(peer(root), peer(root) + n);
    g_.barrier().arrive_and_wait();
    std::copy(v.begin(), v.end(), data);
    g_.barrier().arrive_and_wait();
  }
  // Point-to-point through per-(source, destination) mailboxes: send never blocks.
  void send(const float* data, std::size_t n, int peer) override {
    g_.post(rank_, peer, std::vector<float>(data, data + n));
  }
  void recv(float* data, std::size_t n, int peer) override {
    std::vector<float> v = g_.take(peer, rank_);
    if (v.size() != n) throw std::logic_error("recv size mismatch");
    std::copy(v.begin(), v.end(), data);
  }
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
