#include "runtime/distributed_optimizer.h"

#include <algorithm>

#include "common/errors.h"

namespace strata::runtime {

DistributedOptimizer::DistributedOptimizer(ParameterStore<float>& store, kernels::Communicator* dp,
                                           int zero, const AdamWConfig& cfg,
                                           std::size_t bucket_floats)
    : store_(store), dp_(dp), zero_(zero), cfg_(cfg), bucket_(std::max<std::size_t>(1, bucket_floats)) {
  if (dp_ != nullptr) {
    dp_size_ = dp_->size();
    dp_rank_ = dp_->rank();
  }
  STRATA_CHECK(zero == 0 || zero == 1, "zero stage {}", zero);
  const std::size_t padded = store.padded_size();
  if (zero_ == 1) {
    STRATA_CHECK(padded % static_cast<std::size_t>(dp_size_) == 0, "buffer {} not padded to dp {}",
                 padded, dp_size_);
    const std::size_t shard = padded / static_cast<std::size_t>(dp_size_);
    begin_ = shard * static_cast<std::size_t>(dp_rank_);
    end_ = begin_ + shard;
  } else {
    begin_ = 0;
    end_ = padded;
  }
  m_.assign(end_ - begin_, 0.0f);
  v_.assign(end_ - begin_, 0.0f);
}

void DistributedOptimizer::reduce_gradients() {
  if (dp_size_ == 1) return;
  std::vector<float>& g = store_.grads();
  if (zero_ == 1) {
    std::vector<float> shard(end_ - begin_);
    dp_->reduce_scatter_sum(g.data(), shard.data(), shard.size());
    std::copy(shard.begin(), shard.end(), g.begin() + static_cast<std::ptrdiff_t>(begin_));
    return;
  }
  for (std::size_t off = 0; off < g.size(); off += bucket_)
    dp_->all_reduce_sum(g.data() + off, std::min(bucket_, g.size() - off));
}

void DistributedOptimizer::step(std::int64_t step, float grad_scale) {
  std::vector<float>& p = store_.params();
  const std::vector<float>& g = store_.grads();
  // Each parameter's part of the owned range, with its own weight-decay flag.
  for (const auto& e : store_.entries()) {
    const std::size_t lo = std::max(begin_, e.offset), hi = std::min(end_, e.offset + e.numel);
    if (lo >= hi) continue;
    adamw_update(p.data() + lo, g.data() + lo, m_.data() + (lo - begin_), v_.data() + (lo - begin_),
                 hi - lo, cfg_, step, e.spec.weight_decay, grad_scale);
  }
  if (zero_ == 1 && dp_size_ > 1) {
    std::vector<float> shard(p.begin() + static_cast<std::ptrdiff_t>(begin_),
                             p.begin() + static_cast<std::ptrdiff_t>(end_));
    dp_->all_gather(shard.data(), p.data(), shard.size());
  }
}

}  // namespace strata::runtime
