// JSON rendering (DESIGN.md "Interfaces that others rely on"): one object per command,
// versioned with "schema_version", so `strata plan --format json | jq` always works.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/format_table.h"
#include "report/plan_report.h"
#include "costmodel/cluster_spec.h"
#include "planner/plan.h"

namespace strata::report {

inline constexpr int kJsonSchemaVersion = 1;

// One plan as the DESIGN.md object: model, cluster, gpus, strategy, prediction,
// fits_memory (from planner::plan_to_json, its key order kept).
nlohmann::ordered_json plan_json(const planner::Plan& plan);

// `strata plan`: {schema_version, model, cluster, gpus, global_batch, candidates_evaluated,
// infeasible_memory, invalid, search_s, defaults, notes, plans: [best first]}.
std::string format_plan_json(const PlanReport& report);
// `strata simulate`: the single plan object plus schema_version and notes.
std::string format_simulation_json(const PlanReport& report);

std::string format_models_json(const std::vector<ModelRow>& models);
// One model (`strata models show M --format json`): the fields of a models-list entry,
// params_total and params_active included, plus schema_version.
std::string format_model_json(const ModelRow& model);
std::string format_clusters_json(const std::vector<costmodel::ClusterSpec>& clusters);

}  // namespace strata::report
