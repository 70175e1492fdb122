// DistributedOptimizer: data-parallel gradient reduction plus AdamW, with or without
// ZeRO-1 (Megatron's distributed optimizer, Rajbhandari et al. 2020):
//   zero 0  all-reduce the flat gradient buffer over DP in buckets; every DP rank
//           updates all parameters (identical copies).
//   zero 1  reduce-scatter the buffer so DP rank d holds the summed gradient of shard d
//           (padded_size / dp values); AdamW updates that shard with shard-sized moments;
//           an all-gather brings every rank the updated parameters.
//   zero 2  as zero 1, and a bucket's gradients outside this rank's shard are released
//           (overwritten with NaN: nothing may read them) once it is reduce-scattered.
//   zero 3  as zero 2, and parameters are sharded too: after init and after every step
//           only the owned range is kept (the rest is NaN); gather_params() all-gathers a
//           component's parameters before its forward and again before its backward,
//           release_params() drops them after use.
// The flat buffers keep their full size on CPU ranks (the layers point into them), so
// ZeRO-2/3 here give the sharded numerics and collectives, not the memory saving;
// NaN in released ranges makes any read of a value this rank does not hold show up as a
// non-finite loss instead of a silently stale number.
//
// Buckets are runs of whole parameters taken from the end of the buffer (the backward
// pass finishes the last layers first) until they hold `bucket_floats` values. A step's
// reduction overlaps the backward pass: the trainer reports each parameter whose
// gradient is final (grads_ready) and a bucket's non-blocking collective starts as soon
// as all its parameters are; finish_reduction() starts the rest and waits. With ZeRO-1 a
// bucket is reduce-scattered with uneven counts (its overlap with each rank's shard), so
// the shards stay the flat buffer's equal slices whatever the bucketing.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "runtime/adamw.h"
#include "runtime/parameter_store.h"

namespace strata::runtime {

struct GradReduction {
  std::size_t bucket_floats = std::size_t{1} << 22;
  // Parameters whose DP reduction must wait for another reduction the trainer runs
  // first (the tied embedding's first/last-stage sum under ZeRO-1): each sits in a
  // bucket of its own, reduced by reduce_held_back().
  std::set<std::string> held_back;
};

class DistributedOptimizer {
 public:
  // `dp` may be null (one data-parallel rank). With zero 1 the store must be finalized with
  // a padding multiple of the dp size (the shards are equal).
  DistributedOptimizer(ParameterStore<float>& store, kernels::Communicator* dp, int zero,
                       const AdamWConfig& cfg, GradReduction reduction = {});
  ~DistributedOptimizer();

  // One step's reduction, in this order (every DP rank alike):
  //   begin_reduction(uses)   uses[name] = how many grads_ready(name) make it final
  //   grads_ready(name) ...   as the backward pass finishes parameters (optional)
  //   finish_reduction()      starts the buckets not started yet and waits for all
  //   reduce_held_back()
  // Afterwards grads()[owned_begin(), owned_end()) hold the sums over DP.
  void begin_reduction(const std::map<std::string, int>& uses);
  void grads_ready(const std::string& name);
  void finish_reduction();
  void reduce_held_back();
  // The whole sequence without overlap.
  void reduce_gradients();

  // AdamW on [owned_begin, owned_end) with gradients times grad_scale (clipping), then
  // the all-gather of parameters (zero 1). `step` counts from 1.
  void step(std::int64_t step, float grad_scale);
  // zero 3: all-gather over DP the parameters named (each rank sends its owned part), or
  // overwrite their unowned part with NaN. No-ops for zero < 3 or without DP.
  void gather_params(const std::vector<ParamSpec>& specs);
  void release_params(const std::vector<ParamSpec>& specs);
  // zero 3: release every parameter (after init and after a checkpoint load).
  void release_all_params();
  bool shards_params() const { return zero_ == 3 && dp_size_ > 1; }
  // The learning rate of the following steps (the trainer's schedule).
  void set_lr(double lr) { cfg_.lr = lr; }

  std::size_t owned_begin() const { return begin_; }
  std::size_t owned_end() const { return end_; }
  // Moments over the owned range (checkpointed per rank).
  std::vector<float>& exp_avg() { return m_; }
  std::vector<float>& exp_avg_sq() { return v_; }
  int zero() const { return zero_; }
  std::size_t bucket_count() const { return buckets_.size(); }
  // Buckets started by grads_ready() during the last step (the overlapped ones).
  int buckets_overlapped() const { return overlapped_; }

 private:
  struct Bucket {
    std::size_t lo = 0, hi = 0;      // flat-buffer range
    std::vector<std::string> params;
    bool held_back = false;
    int pending = 0;                  // grads_ready calls still to come this step
    bool started = false;
    std::unique_ptr<kernels::PendingRequest> request;
    std::vector<float> shard;         // zero 1: this rank's part, until copied back
  };
  void start(Bucket& b);
  void poison_unowned(std::vector<float>& buf, std::size_t lo, std::size_t hi);
  void complete(Bucket& b);

  ParameterStore<float>& store_;
  kernels::Communicator* dp_;
  int zero_, dp_size_ = 1, dp_rank_ = 0;
  AdamWConfig cfg_;
  std::size_t begin_ = 0, end_ = 0;
  std::vector<float> m_, v_;
  std::vector<Bucket> buckets_;
  std::map<std::string, std::size_t> bucket_of_;
  int overlapped_ = 0;
};

}  // namespace strata::runtime
