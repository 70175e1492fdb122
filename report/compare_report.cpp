#include "report/compare_report.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <fmt/format.h>

#include "common/checked_math.h"
#include "common/errors.h"
#include "planner/search.h"
#include "planner/simulator.h"
#include "planner/trace_bounds.h"
#include "report/report_html.h"
#include "report/report_markdown.h"
#include "report/report_notes.h"
#include "report/strategy_list.h"

namespace strata::report {

namespace {

struct Chosen {
  planner::Strategy strategy;
  std::vector<std::vector<int>> stage_layers;  // empty: partition by the planner
};

// The listed strategies (a strategies file, or the measured plans), completed and checked.
std::vector<Chosen> listed_strategies(const models::ModelSpec& model, const costmodel::ClusterSpec& cluster,
                                      const CompareOptions& o, ReportData& data) {
  std::vector<planner::Strategy> list;
  if (!o.strategies_path.empty()) {
    list = parse_strategy_list(o.strategies_text, o.strategies_path, o.gpus, o.global_batch);
    data.origin = o.strategies_path;
  } else {
    for (const auto& r : o.measured->runs) list.push_back(r.strategy);
    if (list.empty())
      input_error("--measured {}: its \"plans\" list is empty, so there is nothing to compare; "
                  "give --strategies FILE or --top K to choose the strategies", o.measured_path);
    data.origin = fmt::format("the plans measured in {}", o.measured_path);
  }
  // Without a global batch anywhere: the simulate default, rounded to micro_batch · dp.
  for (auto& s : list) {
    if (s.precision.empty()) s.precision = o.precision;  // --precision, unless the entry sets one
    if (s.global_batch > 0) continue;
    const std::int64_t step = checked_mul(s.micro_batch, static_cast<std::int64_t>(s.dp), "micro-batch x dp");
    s.global_batch = checked_round_up(o.default_global_batch, step, "global batch");
  }
  std::vector<Chosen> chosen;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& s = list[i];
    if (auto v = planner::validate(s, model); !v.empty())
      input_error("strategy {} ({}) is invalid for {}: {}", i + 1, strategy_label(s), model.name,
                  join_violations(v));
    if (s.gpus() > cluster.total_gpus())
      input_error("strategy {} ({}) needs {} GPUs but cluster {} has {}", i + 1, strategy_label(s), s.gpus(),
                  o.cluster_name, cluster.total_gpus());
    chosen.push_back({s, {}});
  }
  if (o.from_measured) data.gpus = list.front().gpus();
  return chosen;
}

std::vector<Chosen> searched_strategies(const models::ModelSpec& model, const costmodel::ClusterSpec& cluster,
                                        const costmodel::SoftwareStack& stack, const CompareOptions& o,
                                        ReportData& data) {
  planner::SearchOptions opt;
  opt.stack = &stack;
  opt.gpus = o.gpus;
  opt.global_batch = o.global_batch;
  opt.top_k = o.top;
  opt.precision = o.precision;
  const planner::SearchResult r = planner::search(model, cluster, opt);
  if (r.ranked.empty())
    throw NoFeasiblePlan(fmt::format(
        "no strategy for {} fits on {} GPUs of {} ({} candidates over memory, {} rejected by "
        "constraints); `strata plan` with the same flags explains the tightest constraint",
        model.name, o.gpus, o.cluster_name, r.infeasible_memory, r.invalid));
  std::vector<Chosen> chosen;
  for (const auto& c : r.ranked) chosen.push_back({c.strategy, c.stage_layers});
  data.origin = fmt::format("planner top {} of {} candidates", r.ranked.size(), r.candidates_evaluated);
  return chosen;
}

// Timelines: recorded only where a Gantt chart is drawn (they are large; Markdown draws
// none), and only when the charts stay within planner::kMaxTraceBytes.
void add_timelines(const models::ModelSpec& model, const costmodel::ClusterSpec& cluster,
                   const costmodel::SoftwareStack& stack, const CompareOptions& o, ReportData& data) {
  const int best = best_entry(data);
  const int showcase = pipelined_showcase(data);
  std::vector<std::size_t> charted;
  double events = 0;
  for (std::size_t i = 0; i < data.entries.size(); ++i) {
    const bool wanted = o.gantt == "all" || (o.gantt == "best" && (static_cast<int>(i) == best ||
                                                                   static_cast<int>(i) == showcase));
    if (!wanted || o.format == "md") continue;
    charted.push_back(i);
    events += planner::trace_event_estimate(data.entries[i].strategy);
  }
  // Bytes per estimated timeline event in the report: up to 170 B in the HTML's SVG and
  // 222 B in the JSON over 60 random strategy sets (tests/report/report_bounds_property_test.cpp,
  // which holds the page to these figures), rounded up.
  const double per_event = o.format == "json" ? 250 : 200;
  if (events * per_event > planner::kMaxTraceBytes)
    input_error("--gantt {}: the timelines of {} strateg{} would hold about {:.0f} events (~{:.0f} MB "
                "of {}), over the {:.0f} MB bound; use --gantt best or none, fewer strategies, or a "
                "smaller --global-batch (fewer micro-batches per step)",
                o.gantt, charted.size(), charted.size() == 1 ? "y" : "ies", events,
                events * per_event / 1e6, o.format, planner::kMaxTraceBytes / 1e6);
  for (const std::size_t i : charted) {
    planner::SimulateOptions so;
    so.stack = &stack;
    so.timeline = true;
    so.stage_layers = data.entries[i].stage_layers;
    data.entries[i].timeline = planner::simulate(model, cluster, data.entries[i].strategy, so).timeline;
  }
}

// Each measured run beside the first compared strategy equal to its plan.
void match_measured(const CompareOptions& o, ReportData& data, const WarnLine& warn) {
  data.measured_origin = o.measured_path;
  data.measured_host = o.measured->host;
  data.measured_host_cores = o.measured->host_cores;
  std::size_t matched = 0, other_model = 0;
  for (const auto& r : o.measured->runs) {
    // A plan that ran another model (validate --plans FILE keeps each file's model) is no
    // measurement of this report's model, whatever its layout.
    if (!r.model.empty() && r.model != data.model) {
      warn(fmt::format("--measured {}: plan '{}' ran model {}, not {}: left out", o.measured_path, r.name, r.model,
                       data.model));
      ++other_model;
      continue;
    }
    for (auto& e : data.entries)
      if (e.strategy == r.strategy && !e.measured) {
        e.measured = r.measured;
        ++matched;
        break;
      }
  }
  if (matched + other_model < o.measured->runs.size())
    warn(fmt::format("{} of {} measured plans in {} match none of the compared strategies",
                     o.measured->runs.size() - matched - other_model, o.measured->runs.size(), o.measured_path));
}

}  // namespace

ReportData build_compare_report(const models::ModelSpec& model, const costmodel::ClusterSpec& cluster,
                                const costmodel::SoftwareStack& stack, const CompareOptions& o,
                                const WarnLine& warn) {
  if (o.measured) {
    if (o.measured->model != model.name)
      warn(fmt::format("--measured {} was measured on model {}, this report is for {}", o.measured_path,
                       o.measured->model, model.name));
    if (o.measured->cluster != o.cluster_name)
      warn(fmt::format("--measured {} was measured on cluster {}, this report is for {}", o.measured_path,
                       o.measured->cluster, o.cluster_name));
  }
  ReportData data;
  data.model = model.name;
  data.cluster = o.cluster_name;
  data.device = cluster.device.name;
  data.device_memory_gib = cluster.device.memory_gib;
  data.device_reserve_gib = cluster.device.reserve_gib;
  data.gpus = o.gpus;
  data.seq_len = model.seq_len;
  data.target = o.target;
  data.command_line = o.command_line;

  const std::vector<Chosen> chosen = !o.strategies_path.empty() || o.from_measured
                                         ? listed_strategies(model, cluster, o, data)
                                         : searched_strategies(model, cluster, stack, o, data);
  for (const Chosen& c : chosen) {
    planner::SimulateOptions so;
    so.stack = &stack;
    so.stage_layers = c.stage_layers;
    const auto sim = planner::simulate(model, cluster, c.strategy, so);
    ReportEntry e;
    e.strategy = c.strategy;
    e.prediction = sim.prediction;
    e.stage_layers = sim.stage_layers;
    data.entries.push_back(std::move(e));
  }
  add_timelines(model, cluster, stack, o, data);
  if (o.measured) match_measured(o, data, warn);
  data.notes = provenance_notes(cluster);
  return data;
}

std::string compare_report_format(const std::string& path, const std::string& given) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string by_ext;
  if (ext == ".md" || ext == ".markdown") by_ext = "md";
  else if (ext == ".json") by_ext = "json";
  else if (ext == ".html" || ext == ".htm") by_ext = "html";
  if (path == "-") by_ext.clear();
  if (!given.empty()) {
    if (!by_ext.empty() && by_ext != given)
      input_error("--report {} names a {} file ({}) but --format is {}: use --format {} or a "
                  "--report path ending in .{}",
                  path, by_ext == "md" ? "Markdown" : by_ext == "json" ? "JSON" : "HTML", ext,
                  given, by_ext, given);
    return given;
  }
  if (!by_ext.empty()) return by_ext;
  return path == "-" ? "md" : "html";
}

std::string render_compare_report(const ReportData& data, const std::string& format) {
  if (format == "html") return report_html(data);
  if (format == "json") return report_json(data);
  return report_markdown(data);
}

}  // namespace strata::report
