// `strata plan --from FILE`: the user's own layout, predicted like the plans and set beside
// them (PlanReport::imported_job), and the note that compares it with the first plan.
#pragma once
#include <string>
#include <vector>

#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "planner/strategy.h"
#include "report/plan_report.h"

namespace strata::report {

// Simulates the job's `strategy` on its `stage_layers` (empty: the even split), stores it in
// report.imported_job and returns the note: "your job from job.sh, tp8 pp8 dp4 ...: 12.3 s
// per step, MFU 41%; the first plan is 1.250x faster", or why it could not be predicted, or
// that it does not fit memory. report.plans holds at least the first plan.
std::string add_imported_job(PlanReport& report, const std::string& source, const std::string& cluster_name,
                             const planner::Strategy& strategy, const std::vector<std::vector<int>>& stage_layers,
                             const models::ModelSpec& model, const costmodel::ClusterSpec& cluster,
                             const costmodel::SoftwareStack& stack);

}  // namespace strata::report
