// Plain-text rendering for people: aligned tables with a header, one row per record.
// Everything here returns strings; the commands decide where they go (stdout).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "report/plan_report.h"
#include "costmodel/cluster_spec.h"
#include "models/model_spec.h"

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
// "45.1%" from a fraction.
std::string percent_cell(double fraction);

// `strata plan`: header lines (model, cluster, gpus, batch, search statistics, notes),
// the ranked table (best first) and a line explaining why the best one won.
std::string format_plan_table(const PlanReport& report);
// `strata simulate`: one strategy's prediction as labelled rows with the breakdown.
std::string format_simulation_table(const PlanReport& report);
// One sentence: the best plan's breakdown and what separates it from the runner-up.
std::string explain_best(const PlanReport& report);
// One line: the best plan's memory per GPU on its fullest pipeline stage, by part.
std::string explain_memory(const planner::Plan* plan);

struct ModelRow {
  models::ModelSpec spec;
  double params = 0;  // total parameters
};
std::string format_models_table(const std::vector<ModelRow>& models);
std::string format_clusters_table(const std::vector<costmodel::ClusterSpec>& clusters);

}  // namespace strata::report
