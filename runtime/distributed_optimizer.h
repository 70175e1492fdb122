// DistributedOptimizer: data-parallel gradient reduction plus AdamW, with or without
// ZeRO-1 (Megatron's distributed optimizer, Rajbhandari et al. 2020):
//   zero 0  all-reduce the flat gradient buffer over DP in buckets; every DP rank
//           updates all parameters (identical copies).
//   zero 1  reduce-scatter the buffer so DP rank d holds the summed gradient of shard d
//           (padded_size / dp values); AdamW updates that shard with shard-sized moments;
//           an all-gather brings every rank the updated parameters.
//   zero 2  gradients sharded too (ParameterStore: this rank keeps only its gradient
//           shard): a component's full-size gradient exists from acquire_grads() before
//           its backward to release_grads() after it, which reduce-scatters it into the
//           shard, every micro-batch (DeepSpeed stage 2's reduction per micro-batch).
//           Parameters stay whole; the updated shards are all-gathered after the step.
//   zero 3  parameters sharded too: fetch_params() starts the all-gather (non-blocking,
//           uneven counts) of a component's parameters before its forward and again
//           before its backward, wait_params() completes it, release_params() drops the
//           full copy after use; no all-gather after the step.
// ZeRO-2/3 gradient reduce-scatters are blocking, one per component and micro-batch.
// The tied embedding shared by the first and last pipeline stage (held_back) keeps its
// whole gradient for the step: its two halves are summed over the embedding group before
// the DP reduce-scatter (the two stages shard it differently).
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
#include "runtime/param_residency.h"
#include "runtime/parameter_store.h"

namespace strata::runtime {

struct GradReduction {
  std::size_t bucket_floats = std::size_t{1} << 22;
  // Parameters whose DP reduction must wait for another reduction the trainer runs
  // first (the tied embedding's first/last-stage sum under ZeRO-1): each sits in a
  // bucket of its own, reduced by reduce_held_back().
  std::set<std::string> held_back;
};

class DistributedOptimizer final : public ParamResidency {
 public:
  // `dp` may be null (one data-parallel rank). With zero >= 1 the store must be finalized
  // with a padding multiple of the dp size (the shards are equal), and with
  // sharding_for(zero, dp) (what ZeRO-2/3 shard).
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
  // What the store shards under `zero` over `dp_size` ranks (this rank: `dp_rank`).
  static StoreSharding sharding_for(int zero, int dp_size, int dp_rank);
  // ParamResidency (ZeRO-2/3; no-ops for what the store does not shard).
  void fetch_params(const std::vector<ParamSpec>& component) override;
  void wait_params(const std::vector<ParamSpec>& component) override;
  void release_params(const std::vector<ParamSpec>& component) override;
  void acquire_grads(const std::vector<ParamSpec>& component) override;
  void release_grads(const std::vector<ParamSpec>& component) override;
  bool prefetch() const override { return prefetch_; }
  void set_prefetch(bool on) { prefetch_ = on; }
  bool shards_params() const { return store_.sharded(StorePart::Params); }
  bool shards_grads() const { return store_.sharded(StorePart::Grads); }
  // Bytes of the optimizer state (AdamW moments of the owned range).
  std::size_t optimizer_bytes() const { return (m_.size() + v_.size()) * sizeof(float); }
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
  void complete(Bucket& b);
  // This rank's overlap counts of flat range [lo, hi) with every shard.
  std::vector<std::size_t> shard_counts(std::size_t lo, std::size_t hi) const;
  void reduce_scatter_into_shard(const ParameterStore<float>::Slab& slab);
  static std::vector<std::string> names(const std::vector<ParamSpec>& component);

  ParameterStore<float>& store_;
  kernels::Communicator* dp_;
  int zero_, dp_size_ = 1, dp_rank_ = 0;
  AdamWConfig cfg_;
  std::size_t begin_ = 0, end_ = 0;
  std::vector<float> m_, v_;
  std::vector<Bucket> buckets_;
  std::map<std::string, std::size_t> bucket_of_;
  int overlapped_ = 0;
  std::vector<std::string> held_back_;
  bool prefetch_ = true;
  // zero 3: all-gathers in flight, by component (its first parameter's name)
  std::map<std::string, std::vector<std::unique_ptr<kernels::PendingRequest>>> fetching_;
};

}  // namespace strata::runtime
