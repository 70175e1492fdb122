// ParameterStore: every parameter this rank holds, laid out in one flat index space (and
// the gradients in the same layout), so gradient sync, ZeRO sharding, the optimizer and
// checkpoints work on contiguous ranges. Register specs, finalize, then look up.
//
// Storage of each part (parameters, gradients):
//   full     the whole padded flat buffer, always resident (ZeRO 0/1; parameters of ZeRO-2).
//   sharded  only this rank's shard of the flat layout is kept (gradients of ZeRO-2/3,
//            parameters of ZeRO-3). A component's full values live in a slab (one per run
//            of its parameters that are contiguous in the flat layout) from hold() to
//            unhold(); param()/grad() return null for a parameter that is not resident, so
//            a layer built while it is released cannot read it. The layers keep raw
//            pointers, so a model chunk rebuilds a component after making it resident.
// The store counts the bytes it holds (kept buffers, slabs now and at their peak): the
// runtime's own memory accounting that `strata train` reports.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/errors.h"
#include "runtime/param_spec.h"

namespace strata::runtime {

enum class StorePart { Params, Grads };

// Which parts are sharded, over how many ranks, and which shard this rank keeps.
struct StoreSharding {
  int shards = 1;
  int index = 0;
  bool params = false;
  bool grads = false;
};

template <typename T>
class ParameterStore {
 public:
  struct Entry {
    ParamSpec spec;
    std::size_t offset = 0;  // into the flat layout
    std::size_t numel = 0;
  };
  // The full values of a contiguous flat range [lo, hi), resident while held.
  struct Slab {
    std::size_t lo = 0, hi = 0;
    std::vector<T> values;
    int entries_held = 0;  // entries of the range some component still holds
  };
  // Bytes the store holds, by part: kept (the full buffer or the shard, for the whole run)
  // and in slabs (now and the largest seen); peak_total_bytes is the largest sum of kept and
  // slab bytes of both parts at one moment.
  struct MemoryUse {
    std::size_t param_kept_bytes = 0, grad_kept_bytes = 0;
    std::size_t param_slab_bytes = 0, grad_slab_bytes = 0;
    std::size_t peak_param_slab_bytes = 0, peak_grad_slab_bytes = 0;
    std::size_t peak_total_bytes = 0;
  };

  // Registers a parameter; a name registered twice (the tied embedding used by the
  // embedding and the LM head of one rank) is kept once.
  void add(const ParamSpec& spec) {
    STRATA_CHECK(!finalized_, "add({}) after finalize", spec.name);
    if (index_.count(spec.name) != 0) return;
    index_[spec.name] = entries_.size();
    Entry e;
    e.spec = spec;
    e.offset = size_;
    e.numel = static_cast<std::size_t>(spec.local_numel());
    size_ += e.numel;
    entries_.push_back(std::move(e));
  }
  // Allocates the kept buffers, the layout padded with zeros to a multiple of
  // `pad_multiple` (ZeRO shards the flat layout evenly over data-parallel ranks).
  void finalize(std::size_t pad_multiple = 1, StoreSharding sharding = {}) {
    finalized_ = true;
    const std::size_t m = std::max<std::size_t>(1, pad_multiple);
    padded_ = (size_ + m - 1) / m * m;
    const auto shards = static_cast<std::size_t>(std::max(1, sharding.shards));
    const bool any = shards > 1 && (sharding.params || sharding.grads);
    STRATA_CHECK(!any || padded_ % shards == 0, "flat layout {} not padded to {} shards", padded_, shards);
    const std::size_t shard = padded_ / shards;
    for (StorePart part : {StorePart::Params, StorePart::Grads}) {
      Storage& s = storage(part);
      s.sharded = any && (part == StorePart::Params ? sharding.params : sharding.grads);
      s.kept_lo = s.sharded ? shard * static_cast<std::size_t>(sharding.index) : 0;
      s.kept.assign(s.sharded ? shard : padded_, T(0));
      s.slab_of.assign(entries_.size(), nullptr);
      s.refs.assign(entries_.size(), 0);
    }
    count();
  }
  // Initial values of every parameter (of its kept part when parameters are sharded).
  void init(std::uint64_t seed) {
    Storage& s = params_;
    for (const Entry& e : entries_) {
      if (!s.sharded) {
        init_param(e.spec, seed, s.kept.data() + e.offset);
        continue;
      }
      const std::size_t lo = std::max(e.offset, s.kept_lo);
      const std::size_t hi = std::min(e.offset + e.numel, s.kept_lo + s.kept.size());
      if (lo >= hi) continue;
      std::vector<T> whole(e.numel);  // before training: not a resident slab
      init_param(e.spec, seed, whole.data());
      std::copy(whole.begin() + static_cast<std::ptrdiff_t>(lo - e.offset),
                whole.begin() + static_cast<std::ptrdiff_t>(hi - e.offset),
                s.kept.begin() + static_cast<std::ptrdiff_t>(lo - s.kept_lo));
    }
  }
  void zero_grads() { std::fill(grads_.kept.begin(), grads_.kept.end(), T(0)); }

  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  const Entry& entry(const std::string& name) const { return entries_[index_of(name)]; }
  // The full values of a parameter / its gradient, or null while a sharded part does not
  // hold it.
  T* param(const std::string& name) { return resident(params_, index_of(name)); }
  T* grad(const std::string& name) { return resident(grads_, index_of(name)); }
  const std::vector<Entry>& entries() const { return entries_; }
  // The kept buffers: the whole flat layout, or the shard starting at kept_begin().
  std::vector<T>& params() { return params_.kept; }
  std::vector<T>& grads() { return grads_.kept; }
  const std::vector<T>& params() const { return params_.kept; }
  const std::vector<T>& grads() const { return grads_.kept; }
  bool sharded(StorePart part) const { return storage(part).sharded; }
  std::size_t kept_begin(StorePart part) const { return storage(part).kept_lo; }
  std::size_t size() const { return size_; }        // values in use
  std::size_t padded_size() const { return padded_; }

  // Sharded part: makes the named entries resident (one more holder each). Entries not
  // resident yet get new zero-filled slabs, one per contiguous run, which are returned
  // for the caller to fill (an all-gather for parameters; gradients accumulate into zeros).
  std::vector<Slab*> hold(StorePart part, const std::vector<std::string>& names) {
    Storage& s = storage(part);
    STRATA_CHECK(s.sharded, "hold() on a part that is not sharded");
    std::vector<std::size_t> fresh;
    for (std::size_t i : distinct(names))
      if (s.refs[i]++ == 0 && s.slab_of[i] == nullptr) fresh.push_back(i);
    std::sort(fresh.begin(), fresh.end(),
              [&](std::size_t a, std::size_t b) { return entries_[a].offset < entries_[b].offset; });
    std::vector<Slab*> out;
    for (std::size_t k = 0; k < fresh.size();) {
      auto slab = std::make_unique<Slab>();
      slab->lo = entries_[fresh[k]].offset;
      std::size_t j = k;
      slab->hi = slab->lo;
      while (j < fresh.size() && entries_[fresh[j]].offset == slab->hi) {
        slab->hi += entries_[fresh[j]].numel;
        s.slab_of[fresh[j]] = slab.get();
        ++slab->entries_held;
        ++j;
      }
      k = j;
      slab->values.assign(slab->hi - slab->lo, T(0));
      s.slab_bytes += slab->values.size() * sizeof(T);
      out.push_back(slab.get());
      s.slabs.push_back(std::move(slab));
    }
    count();
    return out;
  }
  // Sharded part: one holder fewer for each named entry; returns the slabs no entry holds
  // any more (taken out of the store: a gradient slab is reduce-scattered, then dropped).
  std::vector<std::unique_ptr<Slab>> unhold(StorePart part, const std::vector<std::string>& names) {
    Storage& s = storage(part);
    STRATA_CHECK(s.sharded, "unhold() on a part that is not sharded");
    for (std::size_t i : distinct(names)) {
      STRATA_CHECK(s.refs[i] > 0, "unhold({}) of a parameter not held", entries_[i].spec.name);
      if (--s.refs[i] > 0) continue;
      --s.slab_of[i]->entries_held;
      s.slab_of[i] = nullptr;
    }
    std::vector<std::unique_ptr<Slab>> out;
    for (auto it = s.slabs.begin(); it != s.slabs.end();) {
      if ((*it)->entries_held > 0) {
        ++it;
        continue;
      }
      s.slab_bytes -= (*it)->values.size() * sizeof(T);
      out.push_back(std::move(*it));
      it = s.slabs.erase(it);
    }
    count();
    return out;
  }

  MemoryUse memory() const { return use_; }

 private:
  struct Storage {
    bool sharded = false;
    std::vector<T> kept;
    std::size_t kept_lo = 0;  // flat index of kept[0]
    std::vector<std::unique_ptr<Slab>> slabs;
    std::vector<Slab*> slab_of;  // per entry: its resident slab (sharded only)
    std::vector<int> refs;       // per entry: components holding it (sharded only)
    std::size_t slab_bytes = 0;
  };
  Storage& storage(StorePart p) { return p == StorePart::Params ? params_ : grads_; }
  const Storage& storage(StorePart p) const { return p == StorePart::Params ? params_ : grads_; }
  std::size_t index_of(const std::string& name) const {
    auto it = index_.find(name);
    STRATA_CHECK(it != index_.end(), "unknown parameter {}", name);
    return it->second;
  }
  std::vector<std::size_t> distinct(const std::vector<std::string>& names) const {
    std::vector<std::size_t> out;
    for (const auto& n : names) out.push_back(index_of(n));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  T* resident(Storage& s, std::size_t i) {
    if (!s.sharded) return s.kept.data() + entries_[i].offset;
    Slab* slab = s.slab_of[i];
    return slab == nullptr ? nullptr : slab->values.data() + (entries_[i].offset - slab->lo);
  }
  void count() {
    use_.param_kept_bytes = params_.kept.size() * sizeof(T);
    use_.grad_kept_bytes = grads_.kept.size() * sizeof(T);
    use_.param_slab_bytes = params_.slab_bytes;
    use_.grad_slab_bytes = grads_.slab_bytes;
    use_.peak_param_slab_bytes = std::max(use_.peak_param_slab_bytes, params_.slab_bytes);
    use_.peak_grad_slab_bytes = std::max(use_.peak_grad_slab_bytes, grads_.slab_bytes);
    use_.peak_total_bytes = std::max(use_.peak_total_bytes, use_.param_kept_bytes + use_.grad_kept_bytes +
                                                                params_.slab_bytes + grads_.slab_bytes);
  }

  std::vector<Entry> entries_;
  std::map<std::string, std::size_t> index_;
  Storage params_, grads_;
  std::size_t size_ = 0, padded_ = 0;
  bool finalized_ = false;
  MemoryUse use_;
};

}  // namespace strata::runtime
