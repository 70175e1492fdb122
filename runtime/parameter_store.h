// ParameterStore: every parameter this rank holds, in one flat buffer (and one flat
// gradient buffer of the same layout), so gradient sync, ZeRO-1 sharding, the optimizer
// and checkpoints work on contiguous memory. Register specs, finalize, then look up.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/errors.h"
#include "runtime/param_spec.h"

namespace strata::runtime {

template <typename T>
class ParameterStore {
 public:
  struct Entry {
    ParamSpec spec;
    std::size_t offset = 0;  // into params() / grads()
    std::size_t numel = 0;
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
  // Allocates the buffers, padded with zeros to a multiple of `pad_multiple` (ZeRO-1
  // shards the flat buffer evenly over data-parallel ranks).
  void finalize(std::size_t pad_multiple = 1) {
    finalized_ = true;
    const std::size_t m = std::max<std::size_t>(1, pad_multiple);
    padded_ = (size_ + m - 1) / m * m;
    params_.assign(padded_, T(0));
    grads_.assign(padded_, T(0));
  }
  void init(std::uint64_t seed) {
    for (const Entry& e : entries_) init_param(e.spec, seed, params_.data() + e.offset);
  }
  void zero_grads() { std::fill(grads_.begin(), grads_.end(), T(0)); }

  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  const Entry& entry(const std::string& name) const {
    auto it = index_.find(name);
    STRATA_CHECK(it != index_.end(), "unknown parameter {}", name);
    return entries_[it->second];
  }
  T* param(const std::string& name) { return params_.data() + entry(name).offset; }
  T* grad(const std::string& name) { return grads_.data() + entry(name).offset; }
  const std::vector<Entry>& entries() const { return entries_; }
  std::vector<T>& params() { return params_; }
  std::vector<T>& grads() { return grads_; }
  const std::vector<T>& params() const { return params_; }
  const std::vector<T>& grads() const { return grads_; }
  std::size_t size() const { return size_; }        // values in use
  std::size_t padded_size() const { return padded_; }

 private:
  std::vector<Entry> entries_;
  std::map<std::string, std::size_t> index_;
  std::vector<T> params_, grads_;
  std::size_t size_ = 0, padded_ = 0;
  bool finalized_ = false;
};

}  // namespace strata::runtime
