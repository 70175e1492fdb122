// Why `strata plan` found no strategy, as the one `error:` line the user reads: the
// tightest constraint, with numbers (the smallest-memory candidate against the device's
// usable memory, and the weights and optimizer state alone spread over every GPU), or
// the constraints every candidate broke, and what to change.
#pragma once
#include <string>

#include "costmodel/cluster_spec.h"
#include "models/model_spec.h"
#include "planner/search.h"

namespace strata::report {

// `result` is a search over `gpus` GPUs of `cluster` (named `cluster_name` by the user)
// that ranked no strategy.
std::string no_plan_reason(const models::ModelSpec& model, const std::string& cluster_name,
                           const costmodel::ClusterSpec& cluster, int gpus, const planner::SearchResult& result);

}  // namespace strata::report
