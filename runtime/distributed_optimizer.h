// DistributedOptimizer: data-parallel gradient reduction plus AdamW, with or without
// ZeRO-1 (Megatron's distributed optimizer, Rajbhandari et al. 2020):
//   zero 0  all-reduce the flat gradient buffer over DP in buckets; every DP rank
//           updates all parameters (identical copies).
//   zero 1  reduce-scatter the buffer so DP rank d holds the summed gradient of shard d
//           (padded_size / dp values); AdamW updates that shard with shard-sized moments;
//           an all-gather brings every rank the updated parameters.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "runtime/adamw.h"
#include "runtime/parameter_store.h"

namespace strata::runtime {

class DistributedOptimizer {
 public:
  // `dp` may be null (one data-parallel rank). With zero 1 the store must be finalized with
  // a padding multiple of the dp size (the shards are equal).
  DistributedOptimizer(ParameterStore<float>& store, kernels::Communicator* dp, int zero,
                       const AdamWConfig& cfg, std::size_t bucket_floats = std::size_t{1} << 22);

  // Sums gradients over DP. Afterwards grads()[owned_begin(), owned_end()) hold the sums.
  void reduce_gradients();
  // AdamW on [owned_begin, owned_end) with gradients times grad_scale (clipping), then
  // the all-gather of parameters (zero 1). `step` counts from 1.
  void step(std::int64_t step, float grad_scale);
  // The learning rate of the following steps (the trainer's schedule).
  void set_lr(double lr) { cfg_.lr = lr; }

  std::size_t owned_begin() const { return begin_; }
  std::size_t owned_end() const { return end_; }
  // Moments over the owned range (checkpointed per rank).
  std::vector<float>& exp_avg() { return m_; }
  std::vector<float>& exp_avg_sq() { return v_; }
  int zero() const { return zero_; }

 private:
  ParameterStore<float>& store_;
  kernels::Communicator* dp_;
  int zero_, dp_size_ = 1, dp_rank_ = 0;
  AdamWConfig cfg_;
  std::size_t bucket_;
  std::size_t begin_ = 0, end_ = 0;
  std::vector<float> m_, v_;
};

}  // namespace strata::runtime
