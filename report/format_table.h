// Plain-text rendering for people: aligned tables with a header, one row per record.
// Everything here returns strings; the commands decide where they go (stdout).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "report/plan_report.h"
#include "costmodel/cluster_spec.h"
#include "models/model_spec.h"
#include "planner/simulator.h"

namespace strata::report {

enum class Align { Left, Right };

// A column-aligned text table: header row, a rule, then rows.
class Table {
 public:
  explicit Table(std::vector<std::pair<std::string, Align>> columns);
  void add_row(std::vector<std::string> cells);  // must have one cell per column
  std::size_t rows() const { return rows_.size(); }
  std::string render() const;

 private:
  std::vector<std::pair<std::string, Align>> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// "1.234 s", "85.2 ms", "310 us".
std::string duration_cell(double seconds);
// "13.9-16.0 s", "85.2-90.1 ms": a step-time range in one unit (that of `high_s`).
std::string range_cell(double low_s, double high_s);
// The prediction's likely step-time range (iteration_s x [uncertainty_low, uncertainty_high]),
// "-" when the stack was never validated on the device (no band).
std::string likely_range_cell(const planner::Prediction& q);
// "45.1%" from a fraction.
std::string percent_cell(double fraction);

// `strata plan`: header lines (model, cluster, gpus, batch, search statistics, notes),
// the ranked table (best first) and a line explaining why the best one won.
std::string format_plan_table(const PlanReport& report);
// `strata simulate`: one strategy's prediction as labelled rows with the breakdown.
std::string format_simulation_table(const PlanReport& report);
// `strata simulate --ops`: per-op cost rows (first block, head) with achieved TFLOP/s for
// GEMMs and attention, GB/s for memory-bound ops, and each group's totals.
std::string format_op_costs(const std::vector<planner::OpCostRow>& ops);
// One sentence: the best plan's breakdown and what separates it from the runner-up.
std::string explain_best(const PlanReport& report);
// One line: the best plan's memory per GPU on its fullest pipeline stage, by part.
// `which` names the plan in the line ("#1 "), empty for a single simulated strategy.
std::string explain_memory(const planner::Plan* plan, const std::string& which = "");

struct ModelRow {
  models::ModelSpec spec;
  double params = 0;         // total parameters
  double params_active = 0;  // parameters one token uses (= params for dense models)
  double params_mtp = 0;     // of `params`, the multi-token-prediction depths' own (0 without)
  double params_active_mtp = 0;  // of `params_active`, the MTP depths'
};
std::string format_models_table(const std::vector<ModelRow>& models);
std::string format_clusters_table(const std::vector<costmodel::ClusterSpec>& clusters);

}  // namespace strata::report
