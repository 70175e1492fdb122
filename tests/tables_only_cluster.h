// A catalog cluster with the kernel tables alone, for tests of the simulator's and the
// search's mechanics: no fitted training losses (costmodel/training_losses.h) and the
// device's default stack left to the catalog's newest, so a re-fit of the shipped profiles
// or a new validated default stack does not move what these tests compute by hand.
#pragma once
#include <string>

#include "costmodel/cluster_spec.h"

namespace strata::testing {

inline costmodel::ClusterSpec tables_only_cluster(const std::string& name) {
  costmodel::ClusterSpec c = costmodel::load_cluster(name);
  c.device.training_losses = {};
  c.device.default_stack.clear();
  return c;
}

}  // namespace strata::testing
