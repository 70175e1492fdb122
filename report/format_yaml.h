// YAML rendering. `strata simulate --format yaml` prints exactly a plan file (it loads
// with planner::parse_plan_yaml); `strata plan --format yaml` prints the same document
// as the JSON output with each entry of `plans` a plan file's mapping.
#pragma once
#include <string>
#include <vector>

#include "report/format_table.h"
#include "report/plan_report.h"
#include "costmodel/cluster_spec.h"

namespace strata::report {

std::string format_plan_yaml(const PlanReport& report);
std::string format_simulation_yaml(const PlanReport& report);
std::string format_models_yaml(const std::vector<ModelRow>& models);
std::string format_clusters_yaml(const std::vector<costmodel::ClusterSpec>& clusters);

}  // namespace strata::report
