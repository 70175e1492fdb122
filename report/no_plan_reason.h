// Why `strata plan` found no strategy, as the one `error:` line the user reads: the
// tightest constraint, with numbers (the smallest-memory candidate against the device's
// usable memory, and the weights and optimizer state alone spread over every GPU), or
// the constraints every candidate broke, and what to change. When the stack searched with
// cannot run what saves memory (expert parallelism for an MoE model, ZeRO 3, sequence
// parallelism, tensor or pipeline parallelism), the line names those limits: another stack
// may fit where this one cannot.
#pragma once
#include <string>

#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "planner/search.h"

namespace strata::report {

// `result` is a search over `gpus` GPUs of `cluster` (named `cluster_name` by the user)
// with `stack` (nullptr: not named) that ranked no strategy.
std::string no_plan_reason(const models::ModelSpec& model, const std::string& cluster_name,
                           const costmodel::ClusterSpec& cluster, int gpus, const planner::SearchResult& result,
                           const costmodel::SoftwareStack* stack = nullptr);

}  // namespace strata::report
