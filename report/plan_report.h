// PlanReport: everything `strata plan` / `strata simulate` show, as data. The command
// files fill it; format_table / format_json / format_yaml render it (lesson 11).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/plan.h"
#include "report/time_to_train.h"

namespace strata::report {

struct PlanReport {
  std::string command;  // "plan" or "simulate"
  std::string model;    // model name
  std::string cluster;  // cluster as the user gave it (catalog name or path)
  std::string device;   // device profile name
  int gpus = 0;
  std::int64_t global_batch = 0;
  double memory_capacity_gib = 0;     // device memory per GPU
  double reserve_gib = 0;             // of which kept back for workspace
  double headroom_gib = 0;            // --memory-headroom: left free beyond the reserve
  std::vector<std::string> defaults;  // human-readable defaults that were applied
  std::vector<std::string> notes;     // provenance: which numbers are datasheet vs measured
  bool explain = false;               // tables print the notes in full (--explain), else short_note
  std::vector<planner::Plan> plans;   // best first (simulate: exactly one)
  TrainingTarget target;              // --train-tokens (+ --goodput, --gpu-hour-price)
  // plan --from: the user's own job (its layout, predicted like the plans) and its file.
  std::optional<planner::Plan> imported_job;
  std::string imported_job_source;

  // Search statistics (plan only).
  bool searched = false;
  std::int64_t candidates_evaluated = 0;
  std::int64_t infeasible_memory = 0;
  std::int64_t invalid = 0;
  double search_s = 0;
};

}  // namespace strata::report
