#include "runtime/distributed_optimizer.h"

#include <algorithm>

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
  const StoreSharding want = sharding_for(zero_, dp_size_, dp_rank_);
  STRATA_CHECK(store.sharded(StorePart::Params) == want.params && store.sharded(StorePart::Grads) == want.grads,
               "store sharding does not match zero {} over {} ranks", zero_, dp_size_);
  for (StorePart part : {StorePart::Params, StorePart::Grads})
    STRATA_CHECK(!store.sharded(part) || store.kept_begin(part) == begin_, "store shard is not this rank's");
  held_back_.assign(reduction.held_back.begin(), reduction.held_back.end());

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

StoreSharding DistributedOptimizer::sharding_for(int zero, int dp_size, int dp_rank) {
  StoreSharding s;
  s.shards = dp_size;
  s.index = dp_rank;
  s.grads = zero >= 2 && dp_size > 1;
  s.params = zero >= 3 && dp_size > 1;
  return s;
}

std::vector<std::string> DistributedOptimizer::names(const std::vector<ParamSpec>& component) {
  std::vector<std::string> out;
  for (const auto& spec : component) out.push_back(spec.name);
  return out;
}

void DistributedOptimizer::begin_reduction(const std::map<std::string, int>& uses) {
  overlapped_ = 0;
  if (shards_grads()) {  // reduced per component; the held-back gradient stays whole
    std::vector<std::string> held;
    for (const auto& name : held_back_)
      if (store_.contains(name)) held.push_back(name);
    if (!held.empty()) store_.hold(StorePart::Grads, held);
    return;
  }
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
  if (dp_size_ == 1 || shards_grads()) return;
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
}

void DistributedOptimizer::finish_reduction() {
  if (dp_size_ == 1 || shards_grads()) return;
  for (Bucket& b : buckets_)
    if (!b.held_back && !b.started) start(b);
  for (Bucket& b : buckets_) complete(b);
}

void DistributedOptimizer::reduce_held_back() {
  if (dp_size_ == 1) return;
  if (shards_grads()) {
    std::vector<std::string> held;
    for (const auto& name : held_back_)
      if (store_.contains(name)) held.push_back(name);
    if (held.empty()) return;
    for (const auto& slab : store_.unhold(StorePart::Grads, held)) reduce_scatter_into_shard(*slab);
    return;
  }
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
  // The kept buffers: whole, or the owned shard (ZeRO-2 gradients, ZeRO-3 both).
  float* p = store_.params().data();
  const float* g = store_.grads().data();
  const std::size_t p_lo = store_.kept_begin(StorePart::Params), g_lo = store_.kept_begin(StorePart::Grads);
  // Each parameter's part of the owned range, with its own weight-decay flag.
  for (const auto& e : store_.entries()) {
    const std::size_t lo = std::max(begin_, e.offset), hi = std::min(end_, e.offset + e.numel);
    if (lo >= hi) continue;
    adamw_update(p + (lo - p_lo), g + (lo - g_lo), m_.data() + (lo - begin_), v_.data() + (lo - begin_), hi - lo,
                 cfg_, step, e.spec.weight_decay, grad_scale);
  }
  if ((zero_ == 1 || zero_ == 2) && dp_size_ > 1) {
    std::vector<float>& full = store_.params();
    std::vector<float> shard(full.begin() + static_cast<std::ptrdiff_t>(begin_),
                             full.begin() + static_cast<std::ptrdiff_t>(end_));
    dp_->all_gather(shard.data(), full.data(), shard.size());
  }
  // zero 3: the parameters stay sharded; the layers gather them when they run.
}

std::vector<std::size_t> DistributedOptimizer::shard_counts(std::size_t lo, std::size_t hi) const {
  const std::size_t shard = end_ - begin_;
  std::vector<std::size_t> counts(static_cast<std::size_t>(dp_size_));
  for (int d = 0; d < dp_size_; ++d) {
    const std::size_t s_lo = shard * static_cast<std::size_t>(d);
    const std::size_t a = std::max(lo, s_lo), b = std::min(hi, s_lo + shard);
    counts[static_cast<std::size_t>(d)] = b > a ? b - a : 0;
  }
  return counts;
}

void DistributedOptimizer::reduce_scatter_into_shard(const ParameterStore<float>::Slab& slab) {
  const auto counts = shard_counts(slab.lo, slab.hi);
  std::vector<float> mine(counts[static_cast<std::size_t>(dp_rank_)]);
  dp_->ireduce_scatter_sum(slab.values.data(), mine.data(), counts)->wait();
  if (mine.empty()) return;
  float* g = store_.grads().data() + (std::max(slab.lo, begin_) - begin_);
  for (std::size_t i = 0; i < mine.size(); ++i) g[i] += mine[i];
}

void DistributedOptimizer::fetch_params(const std::vector<ParamSpec>& component) {
  if (!shards_params() || component.empty()) return;
  const std::string& key = component.front().name;
  STRATA_CHECK(fetching_.count(key) == 0, "fetch_params({}) while its last fetch is pending", key);
  auto& requests = fetching_[key];
  for (auto* slab : store_.hold(StorePart::Params, names(component))) {
    // each rank sends its overlap with the slab; the parts arrive in flat order
    const auto counts = shard_counts(slab->lo, slab->hi);
    const float* send = store_.params().data() + (std::max(slab->lo, begin_) - begin_);
    requests.push_back(dp_->iall_gather(send, slab->values.data(), counts));
  }
}

void DistributedOptimizer::wait_params(const std::vector<ParamSpec>& component) {
  if (!shards_params() || component.empty()) return;
  auto it = fetching_.find(component.front().name);
  STRATA_CHECK(it != fetching_.end(), "wait_params({}) without fetch_params", component.front().name);
  for (auto& r : it->second) r->wait();
  fetching_.erase(it);
}

void DistributedOptimizer::release_params(const std::vector<ParamSpec>& component) {
  if (!shards_params()) return;
  store_.unhold(StorePart::Params, names(component));  // the slabs no one holds are freed
}

void DistributedOptimizer::acquire_grads(const std::vector<ParamSpec>& component) {
  if (!shards_grads()) return;
  store_.hold(StorePart::Grads, names(component));
}

void DistributedOptimizer::release_grads(const std::vector<ParamSpec>& component) {
  if (!shards_grads()) return;
  for (const auto& slab : store_.unhold(StorePart::Grads, names(component)))
    reduce_scatter_into_shard(*slab);
}

}  // namespace strata::runtime
