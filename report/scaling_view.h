// ScalingView: the best plan at each GPU count a user asks about (`strata plan --gpus
// 128,256,512,1024`), with its step time and likely range, MFU, memory and, given a token
// target, days, GPU-hours and cost; and the step-time vs memory front of one search's
// candidates (which layouts trade memory headroom for speed, and which are dominated).
// Data in, text / JSON / SVG out, like the other report renderers.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/cluster_spec.h"
#include "planner/plan.h"
#include "planner/search.h"
#include "report/time_to_train.h"

namespace strata::report {

struct ScalingPoint {
  int gpus = 0;
  std::optional<planner::Plan> best;  // nullopt: no strategy fits on this many GPUs
  std::string no_plan_reason;         // why not, when best is empty
  std::int64_t candidates = 0;        // the search's evaluated candidates
};

struct ScalingView {
  std::string model, cluster, device;
  TrainingTarget target;  // tokens == 0: no time-to-train columns
  std::vector<ScalingPoint> points;  // in the order asked
};

// One search per count of `counts` with `base`'s options (its gpus and top_k replaced),
// each count's best plan or why none fits; NoFeasiblePlan when no count has one.
ScalingView build_scaling_view(const models::ModelSpec& model, const std::string& cluster_name,
                               const costmodel::ClusterSpec& cluster, const std::vector<int>& counts,
                               const planner::SearchOptions& base, const TrainingTarget& target);

// Parses "128,256,512" (whole numbers >= 1, no repeats, at most 64 of them) into counts;
// InputError naming `flag` otherwise.
std::vector<int> parse_gpu_counts(const std::string& text, const std::string& flag);

// One row per GPU count: gpus, layout, step time, likely range, tokens/s per GPU, MFU,
// memory; with a target also days (range), GPU-hours and cost; "no plan: <reason>" rows
// for counts where nothing fits. Then one line on scaling efficiency: tokens/s per GPU at
// the largest count over that at the smallest.
std::string format_scaling_table(const ScalingView& view);
nlohmann::ordered_json scaling_json(const ScalingView& view);
// Two SVG bar charts for the report: step time, and days (or GPU-hours without a target)
// per GPU count.
std::string scaling_svg(const ScalingView& view);
// A self-contained HTML page (`plan --gpus ... --report`): the table and the two charts.
std::string scaling_html(const ScalingView& view);

// The plans no other plan beats on both step time and peak memory (ties kept once), by
// ascending memory: indices into `plans`.
std::vector<std::size_t> pareto_front(const std::vector<planner::Plan>& plans);
// The front as a table: layout, step time, memory, and how much slower / less memory than
// the fastest plan of the front.
std::string format_pareto_table(const std::vector<planner::Plan>& plans, double memory_capacity_gib);
// The same as a page (`plan --front --report f.html`): every plan that fits as a point of
// step time against memory per GPU, the front joined and highlighted, the device memory
// as a line, and the table under the chart.
std::string pareto_html(const std::vector<planner::Plan>& plans, double memory_capacity_gib,
                        const std::string& title);

}  // namespace strata::report
