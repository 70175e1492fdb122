// The compare report as one JSON object (the same data as the HTML and Markdown), and
// the strategy <-> JSON mapping shared with `strata validate`'s output.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "report/report_data.h"

namespace strata::report {

// {"dp","tp","pp","vpp","micro_batch","global_batch","zero","recompute",
//  "sequence_parallel","schedule","rank_order"} as DESIGN.md names them.
nlohmann::json strategy_to_json(const planner::Strategy& s);
// Reads the object above (all keys but rank_order required); InputError names
// `where` and the key on a missing or mistyped value.
planner::Strategy strategy_from_json(const nlohmann::json& j, const std::string& where);

// A number, or null where it is not finite (JSON has no inf / nan).
nlohmann::json number_or_null(double v);

// DESIGN.md's prediction object plus stage_memory_gib.
nlohmann::json prediction_to_json(const planner::Prediction& p);

// What `strata validate --format json` wrote, for `strata compare --measured`.
struct MeasuredRun {
  std::string name;
  std::string model;  // the model the plan ran; "" in files written before plans named it
  planner::Strategy strategy;
  MeasuredStep measured;
};
struct MeasuredFile {
  std::string model;
  std::string cluster;
  std::string host;    // "" in files written before validate recorded it
  int host_cores = 0;
  int ranks = 0;
  std::vector<MeasuredRun> runs;
};
// InputError naming `source` and the field on anything malformed.
MeasuredFile parse_measured_json(const std::string& text, const std::string& source);

// {"schema_version":1,"model","cluster","device","device_memory_gib","gpus",
//  "best_index","strategies":[{"index","label","best","strategy","prediction",
//  "fits_memory","stage_layers","measured","timeline"}]}.
std::string report_json(const ReportData& data);

}  // namespace strata::report
