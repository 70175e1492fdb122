// Recompute, never trust: a plan file's stored prediction may be stale (its model edited
// after planning, an older strata) or impossible, and whoever acts on the plan (train's
// memory pre-flight, the predicted step in its metrics) must use numbers that describe the
// plan's model and strategy.
#pragma once
#include <string>

#include "planner/plan.h"

namespace strata::planner {

// Replaces plan.prediction with the one simulate() gives for the plan's model, strategy
// and stage map on its cluster under its stack (the stored prediction's stack, else the
// device's default). Ranks beyond the cluster's size get nodes added (a rank's memory does
// not depend on the node count). When the cluster or stack can no longer be loaded, the
// prediction is recomputed on `stand_in` (a cluster name: the host the job runs on) and the
// user told; with no stand-in the stored prediction stays, and with no stored memory
// prediction either, that is an InputError naming `source` ("--plan p.yaml"). The stored
// prediction also stays when the simulator refuses the plan. Returns a line for the user
// when the stored prediction differed by more than 2% in peak memory or step time, was
// recomputed elsewhere, or could not be recomputed; "" otherwise.
std::string recompute_plan_prediction(Plan& plan, const std::string& source, const std::string& stand_in = "");

}  // namespace strata::planner
