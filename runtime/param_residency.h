// ParamResidency: how a model chunk makes a component's (the embedding's, one block's, the
// head's) sharded parameters and gradients resident around its forward and backward
// (ZeRO-2/3; implemented by DistributedOptimizer). Every data-parallel rank calls these in
// the same order: they issue collectives. A component is named by its parameter specs.
//
//   forward:   fetch_params(c) ... wait_params(c), compute, release_params(c)
//   backward:  fetch_params(c) ... wait_params(c), acquire_grads(c), compute,
//              release_params(c), release_grads(c)
// With prefetch() the chunk fetches the next component before computing the current
// one, so its all-gather runs beside the compute and two components are gathered at once.
#pragma once
#include <vector>

#include "runtime/param_spec.h"

namespace strata::runtime {

class ParamResidency {
 public:
  virtual ~ParamResidency() = default;
  // Starts bringing the component's full parameters in (a non-blocking all-gather; a
  // no-op when parameters are not sharded).
  virtual void fetch_params(const std::vector<ParamSpec>& component) = 0;
  // Completes that fetch: the parameters are readable.
  virtual void wait_params(const std::vector<ParamSpec>& component) = 0;
  virtual void release_params(const std::vector<ParamSpec>& component) = 0;
  // Zeroed full-size gradient buffers for the component's backward (when gradients are
  // sharded); release_grads reduce-scatters them into this rank's gradient shard and drops
  // them.
  virtual void acquire_grads(const std::vector<ParamSpec>& component) = 0;
  virtual void release_grads(const std::vector<ParamSpec>& component) = 0;
  virtual bool prefetch() const = 0;
};

}  // namespace strata::runtime
