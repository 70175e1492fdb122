#include "runtime/distributed_optimizer.h"

#include <algorithm>
#include <limits>

#include "common/errors.h"

namespace strata::runtime {

DistributedOptimizer::DistributedOptimizer(ParameterStore<float>& store, kernels::Communicator* dp,
                                           int zero, const AdamWConfig& cfg,
                                           GradReduction reduction)
    : store_(store), dp_(dp), zero_(zero), cfg_(cfg) {
  if (dp_ != nullptr) {
    dp_size_ = dp_->size();
    dp_rank_ = dp_->rank();
  }
  STRATA_CHECK(zero >= 0 && zero <= 3, "zero stage {}", zero);
  const std::size_t padded = store.padded_size();
  if (zero_ >= 1) {
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

  // Buckets from the end of the buffer; the first one also takes the padding.
  const std::size_t cap = std::max<std::size_t>(1, reduction.bucket_floats);
  const auto& entries = store.entries();
  Bucket open;
  auto close = [&] {
    if (open.params.empty()) return;
    if (buckets_.empty()) open.hi = padded;
    for (const auto& name : open.params) bucket_of_[name] = buckets_.size();
    buckets_.push_back(std::move(open));
    open = Bucket{};
  };
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    const bool held = reduction.held_back.count(it->spec.name) != 0;
    if (held) close();
    if (open.params.empty()) open.hi = it->offset + it->numel;
    open.lo = it->offset;
    open.params.push_back(it->spec.name);
    open.held_back = held;
    if (held || open.hi - open.lo >= cap) close();
  }
  close();
  if (buckets_.empty() && padded > 0) {  // padding only
    Bucket b;
    b.hi = padded;
    buckets_.push_back(std::move(b));
  }
}

DistributedOptimizer::~DistributedOptimizer() = default;

void DistributedOptimizer::begin_reduction(const std::map<std::string, int>& uses) {
  overlapped_ = 0;
  for (Bucket& b : buckets_) {
    STRATA_CHECK(b.request == nullptr, "gradient bucket still in flight from the last step");
    b.started = false;
    b.pending = 0;
    for (const auto& name : b.params) {
      auto it = uses.find(name);
      if (it != uses.end()) b.pending += it->second;
    }
  }
}

void DistributedOptimizer::grads_ready(const std::string& name) {
  if (dp_size_ == 1) return;
  auto it = bucket_of_.find(name);
  STRATA_CHECK(it != bucket_of_.end(), "grads_ready({}): not a parameter of this rank", name);
  Bucket& b = buckets_[it->second];
  STRATA_CHECK(b.pending > 0, "grads_ready({}) more often than announced", name);
  if (--b.pending == 0 && !b.held_back && !b.started) {
    start(b);
    ++overlapped_;
  }
  // MPI advances a non-blocking collective only inside MPI calls: poll the ones in
  // flight so they move while the backward pass computes.
  for (Bucket& f : buckets_)
    if (f.request != nullptr) f.request->done();
}

void DistributedOptimizer::start(Bucket& b) {
  b.started = true;
  float* g = store_.grads().data();
  if (zero_ == 0) {
    b.request = dp_->iall_reduce_sum(g + b.lo, b.hi - b.lo);
    return;
  }
  const std::size_t shard = (end_ - begin_);
  std::vector<std::size_t> counts(static_cast<std::size_t>(dp_size_));
  for (int d = 0; d < dp_size_; ++d) {
    const std::size_t s_lo = shard * static_cast<std::size_t>(d), s_hi = s_lo + shard;
    const std::size_t lo = std::max(b.lo, s_lo), hi = std::min(b.hi, s_hi);
    counts[static_cast<std::size_t>(d)] = hi > lo ? hi - lo : 0;
  }
  b.shard.assign(counts[static_cast<std::size_t>(dp_rank_)], 0.0f);
  b.request = dp_->ireduce_scatter_sum(g + b.lo, b.shard.data(), counts);
}

void DistributedOptimizer::complete(Bucket& b) {
  if (b.request == nullptr) return;
  b.request->wait();
  b.request.reset();
  if (zero_ >= 1 && !b.shard.empty()) {
    std::copy(b.shard.begin(), b.shard.end(),
              store_.grads().begin() + static_cast<std::ptrdiff_t>(std::max(b.lo, begin_)));
    b.shard = {};
  }
  if (zero_ >= 2) poison_unowned(store_.grads(), b.lo, b.hi);
}

void DistributedOptimizer::finish_reduction() {
  if (dp_size_ == 1) return;
  for (Bucket& b : buckets_)
    if (!b.held_back && !b.started) start(b);
  for (Bucket& b : buckets_) complete(b);
}

void DistributedOptimizer::reduce_held_back() {
  if (dp_size_ == 1) return;
  for (Bucket& b : buckets_)
    if (b.held_back) {
      start(b);
      complete(b);
    }
}

void DistributedOptimizer::reduce_gradients() {
  begin_reduction({});
  finish_reduction();
  reduce_held_back();
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
  if ((zero_ == 1 || zero_ == 2) && dp_size_ > 1) {
    std::vector<float> shard(p.begin() + static_cast<std::ptrdiff_t>(begin_),
                             p.begin() + static_cast<std::ptrdiff_t>(end_));
    dp_->all_gather(shard.data(), p.data(), shard.size());
  }
  // zero 3: the parameters stay sharded; the layers gather them when they run.
}

void DistributedOptimizer::poison_unowned(std::vector<float>& buf, std::size_t lo, std::size_t hi) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::size_t i = lo; i < std::min(hi, begin_); ++i) buf[i] = nan;
  for (std::size_t i = std::max(lo, end_); i < hi; ++i) buf[i] = nan;
}

void DistributedOptimizer::gather_params(const std::vector<ParamSpec>& specs) {
  if (!shards_params()) return;
  // An all-gather with uneven parts (each rank's overlap of every named parameter with
  // its shard), sent as equal blocks of the largest part: the interface has no
  // all-gatherv, and a component's parameters are small next to the rest of a step.
  const std::size_t shard = end_ - begin_;
  std::vector<const ParameterStore<float>::Entry*> entries;
  for (const auto& spec : specs) {
    const auto* e = &store_.entry(spec.name);
    if (std::find(entries.begin(), entries.end(), e) == entries.end()) entries.push_back(e);
  }
  auto overlap = [&](int d, const ParameterStore<float>::Entry& e) {
    const std::size_t s_lo = shard * static_cast<std::size_t>(d);
    const std::size_t lo = std::max(e.offset, s_lo), hi = std::min(e.offset + e.numel, s_lo + shard);
    return std::pair{lo, hi > lo ? hi : lo};
  };
  std::size_t block = 0;
  for (int d = 0; d < dp_size_; ++d) {
    std::size_t n = 0;
    for (const auto* e : entries) {
      const auto [lo, hi] = overlap(d, *e);
      n += hi - lo;
    }
    block = std::max(block, n);
  }
  if (block == 0) return;
  std::vector<float>& p = store_.params();
  std::vector<float> send(block, 0.0f), recv(block * static_cast<std::size_t>(dp_size_));
  std::size_t at = 0;
  for (const auto* e : entries) {
    const auto [lo, hi] = overlap(dp_rank_, *e);
    std::copy(p.begin() + static_cast<std::ptrdiff_t>(lo), p.begin() + static_cast<std::ptrdiff_t>(hi),
              send.begin() + static_cast<std::ptrdiff_t>(at));
    at += hi - lo;
  }
  dp_->all_gather(send.data(), recv.data(), block);
  for (int d = 0; d < dp_size_; ++d) {
    const float* from = recv.data() + block * static_cast<std::size_t>(d);
    for (const auto* e : entries) {
      const auto [lo, hi] = overlap(d, *e);
      std::copy(from, from + (hi - lo), p.begin() + static_cast<std::ptrdiff_t>(lo));
      from += hi - lo;
    }
  }
}

void DistributedOptimizer::release_params(const std::vector<ParamSpec>& specs) {
  if (!shards_params()) return;
  for (const auto& spec : specs) {
    const auto& e = store_.entry(spec.name);
    poison_unowned(store_.params(), e.offset, e.offset + e.numel);
  }
}

void DistributedOptimizer::release_all_params() {
  if (!shards_params()) return;
  poison_unowned(store_.params(), 0, store_.params().size());
}

}  // namespace strata::runtime
