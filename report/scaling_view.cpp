#include "report/scaling_view.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.h"
#include "report/format_table.h"
#include "report/no_plan_reason.h"
#include "report/report_data.h"
#include "report/svg_chart.h"

namespace strata::report {

namespace {

constexpr std::size_t kMaxGpuCounts = 64;

double tokens_per_s_per_gpu(const planner::Plan& p, int gpus) {
  return gpus > 0 ? p.prediction.tokens_per_s / gpus : 0.0;
}

std::optional<TimeToTrain> training_time(const ScalingView& v, const ScalingPoint& pt) {
  if (!v.target.given() || !pt.best) return std::nullopt;
  return time_to_train(pt.best->strategy, pt.best->prediction, pt.best->model.seq_len, v.target);
}

// Fastest and slowest points that have a plan: the scaling efficiency line.
std::string efficiency_line(const ScalingView& v) {
  const ScalingPoint* lo = nullptr;
  const ScalingPoint* hi = nullptr;
  for (const auto& pt : v.points) {
    if (!pt.best) continue;
    if (!lo || pt.gpus < lo->gpus) lo = &pt;
    if (!hi || pt.gpus > hi->gpus) hi = &pt;
  }
  if (!lo || lo == hi) return "";
  const double a = tokens_per_s_per_gpu(*lo->best, lo->gpus), b = tokens_per_s_per_gpu(*hi->best, hi->gpus);
  if (!(a > 0)) return "";
  return fmt::format("# scaling: {} -> {} GPUs ({:.3g}x the GPUs) keeps {:.1f}% of the tokens/s per GPU; "
                     "step time {} -> {}\n",
                     lo->gpus, hi->gpus, static_cast<double>(hi->gpus) / lo->gpus, 100.0 * b / a,
                     duration_cell(lo->best->prediction.iteration_s),
                     duration_cell(hi->best->prediction.iteration_s));
}

}  // namespace

ScalingView build_scaling_view(const models::ModelSpec& model, const std::string& cluster_name,
                               const costmodel::ClusterSpec& cluster, const std::vector<int>& counts,
                               const planner::SearchOptions& base, const TrainingTarget& target) {
  ScalingView view;
  view.model = model.name;
  view.cluster = cluster_name;
  view.device = cluster.device.name;
  view.target = target;
  for (int n : counts) {
    planner::SearchOptions opt = base;
    opt.gpus = n;
    opt.top_k = 1;
    const planner::SearchResult r = planner::search(model, cluster, opt);
    ScalingPoint pt;
    pt.gpus = n;
    pt.candidates = r.candidates_evaluated;
    if (r.ranked.empty())
      pt.no_plan_reason = no_plan_reason(model, cluster_name, cluster, n, r, base.stack);
    else
      pt.best = planner::to_plan(model, cluster_name, r.ranked.front());
    view.points.push_back(std::move(pt));
  }
  if (std::none_of(view.points.begin(), view.points.end(), [](const auto& p) { return p.best.has_value(); }))
    throw NoFeasiblePlan(fmt::format("no strategy for {} fits on any of {} GPUs of {}", model.name,
                                     fmt::join(counts, ","), cluster_name));
  return view;
}

std::vector<int> parse_gpu_counts(const std::string& text, const std::string& flag) {
  std::vector<int> out;
  std::set<int> seen;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    std::string item = text.substr(pos, comma - pos);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    int v = 0;
    const auto [end, err] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || err != std::errc{} || end != item.data() + item.size() || v < 1)
      input_error("{} '{}': '{}' is not a GPU count (a whole number >= 1; list counts as 128,256,512)", flag,
                  text, item);
    if (!seen.insert(v).second) input_error("{} '{}': {} is listed twice", flag, text, v);
    out.push_back(v);
    if (out.size() > kMaxGpuCounts)
      input_error("{} '{}': at most {} GPU counts (each is a full search)", flag, text, kMaxGpuCounts);
    pos = comma + 1;
  }
  return out;
}

std::string format_scaling_table(const ScalingView& v) {
  std::string o = fmt::format("# scaling: {} on {} ({}), best plan per GPU count\n", v.model, v.cluster, v.device);
  std::vector<std::pair<std::string, Align>> cols = {
      {"gpus", Align::Right},         {"layout", Align::Left},      {"step time", Align::Right},
      {"likely range", Align::Right}, {"tok/s/GPU", Align::Right},  {"MFU", Align::Right},
      {"mem/GPU GiB", Align::Right}};
  if (v.target.given()) {
    cols.push_back({"days", Align::Right});
    cols.push_back({"GPU-hours", Align::Right});
    if (v.target.gpu_hour_price > 0) cols.push_back({"cost", Align::Right});
  }
  Table t(cols);
  std::string missing;
  for (const auto& pt : v.points) {
    if (!pt.best) {
      std::vector<std::string> row(cols.size(), "-");
      row[0] = std::to_string(pt.gpus);
      row[1] = "no plan fits";
      t.add_row(std::move(row));
      missing += fmt::format("# {} GPUs: {}\n", pt.gpus, pt.no_plan_reason);
      continue;
    }
    const planner::Prediction& q = pt.best->prediction;
    std::vector<std::string> row = {std::to_string(pt.gpus),
                                    strategy_label(pt.best->strategy),
                                    duration_cell(q.iteration_s),
                                    likely_range_cell(q),
                                    format_count(tokens_per_s_per_gpu(*pt.best, pt.gpus)),
                                    percent_cell(q.mfu),
                                    fmt::format("{:.1f}", q.peak_memory_gib)};
    if (const auto tt = training_time(v, pt)) {
      row.push_back(format_ranged_days(tt->days, tt->banded));
      row.push_back(format_gpu_hours(tt->gpu_hours.value));
      if (v.target.gpu_hour_price > 0) row.push_back(format_usd(tt->cost_usd.value));
    }
    t.add_row(std::move(row));
  }
  if (v.target.given())
    o += fmt::format("# time to train {} tokens at goodput {:g}{}\n", format_token_count(v.target.tokens),
                     v.target.goodput,
                     v.target.gpu_hour_price > 0 ? fmt::format(", ${:g}/GPU-hour", v.target.gpu_hour_price) : "");
  o += t.render();
  o += missing;
  o += efficiency_line(v);
  return o;
}

nlohmann::ordered_json scaling_json(const ScalingView& v) {
  nlohmann::ordered_json j;
  j["model"] = v.model;
  j["cluster"] = v.cluster;
  j["device"] = v.device;
  j["points"] = nlohmann::ordered_json::array();
  for (const auto& pt : v.points) {
    nlohmann::ordered_json p;
    p["gpus"] = pt.gpus;
    p["candidates_evaluated"] = pt.candidates;
    if (!pt.best) {
      p["plan"] = nullptr;
      p["no_plan_reason"] = pt.no_plan_reason;
    } else {
      const planner::Prediction& q = pt.best->prediction;
      p["layout"] = strategy_label(pt.best->strategy);
      p["iteration_s"] = q.iteration_s;
      p["likely_iteration_s"] = {q.iteration_s * q.uncertainty_low, q.iteration_s * q.uncertainty_high};
      p["tokens_per_s_per_gpu"] = tokens_per_s_per_gpu(*pt.best, pt.gpus);
      p["mfu"] = q.mfu;
      p["peak_memory_gib"] = q.peak_memory_gib;
      p["plan"] = nlohmann::ordered_json::parse(planner::plan_to_json(*pt.best));
      if (const auto tt = training_time(v, pt)) p["time_to_train"] = time_to_train_json(*tt);
    }
    j["points"].push_back(std::move(p));
  }
  return j;
}

std::string scaling_svg(const ScalingView& v) {
  svg::GroupedBarChart step;
  step.title = fmt::format("{}: predicted step time per GPU count (best plan)", v.model);
  step.axis_label = "seconds per step";
  svg::GroupedBarChart total;
  const bool days = v.target.given();
  total.title = days ? fmt::format("time to train {} tokens", format_token_count(v.target.tokens))
                     : "tokens per second per GPU";
  total.axis_label = days ? "days" : "tokens/s per GPU";
  for (const auto& pt : v.points) {
    if (!pt.best) continue;
    const std::string label = fmt::format("{} GPUs", pt.gpus);
    step.groups.push_back({label, {pt.best->prediction.iteration_s}, {}});
    if (const auto tt = training_time(v, pt))
      total.groups.push_back({label, {tt->days.value}, {}});
    else
      total.groups.push_back({label, {tokens_per_s_per_gpu(*pt.best, pt.gpus)}, {}});
  }
  step.bar_legend = total.bar_legend = "the count's best plan";
  if (step.groups.empty()) return "";
  return svg::grouped_bar_chart(step) + "\n" + svg::grouped_bar_chart(total);
}

std::string scaling_html(const ScalingView& v) {
  return fmt::format("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>strata scaling: {}</title>"
                     "</head>\n<body style=\"font-family:sans-serif\">\n<h1>{} on {}: best plan per GPU count"
                     "</h1>\n<pre>{}</pre>\n{}\n</body></html>\n",
                     svg::escape(v.model), svg::escape(v.model), svg::escape(v.cluster),
                     svg::escape(format_scaling_table(v)), scaling_svg(v));
}

std::vector<std::size_t> pareto_front(const std::vector<planner::Plan>& plans) {
  std::vector<std::size_t> order(plans.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto mem = [&](std::size_t i) { return plans[i].prediction.peak_memory_gib; };
  auto time = [&](std::size_t i) { return plans[i].prediction.iteration_s; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return mem(a) != mem(b) ? mem(a) < mem(b) : time(a) < time(b);
  });
  // Walking up in memory, a plan joins the front when it is strictly faster than every
  // plan that needs no more memory.
  std::vector<std::size_t> front;
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t i : order) {
    if (time(i) < best) {
      front.push_back(i);
      best = time(i);
    }
  }
  return front;
}

std::string format_pareto_table(const std::vector<planner::Plan>& plans, double memory_capacity_gib) {
  const std::vector<std::size_t> front = pareto_front(plans);
  if (front.empty()) return "";
  const double fastest = plans[front.back()].prediction.iteration_s;
  Table t({{"layout", Align::Left},
           {"step time", Align::Right},
           {"vs fastest", Align::Right},
           {"mem/GPU GiB", Align::Right},
           {"headroom GiB", Align::Right}});
  for (std::size_t i : front) {
    const planner::Prediction& q = plans[i].prediction;
    t.add_row({strategy_label(plans[i].strategy), duration_cell(q.iteration_s),
               fmt::format("{:+.1f}%", 100.0 * (q.iteration_s / fastest - 1)),
               fmt::format("{:.1f}", q.peak_memory_gib),
               fmt::format("{:.1f}", memory_capacity_gib - q.peak_memory_gib)});
  }
  return fmt::format("# step time vs memory: the {} of {} plans no other plan beats on both (least memory "
                     "first)\n",
                     front.size(), plans.size()) +
         t.render();
}

std::string pareto_html(const std::vector<planner::Plan>& plans, double memory_capacity_gib,
                        const std::string& title) {
  const std::vector<std::size_t> front = pareto_front(plans);
  std::vector<bool> on_front(plans.size(), false);
  for (std::size_t i : front) on_front[i] = true;
  svg::ScatterChart c;
  c.title = "step time vs memory per GPU";
  c.x_label = "memory per GPU (GiB)";
  c.y_label = "seconds per step";
  c.point_legend = "a plan that fits";
  c.highlight_legend = "the front: no plan is faster with as little memory";
  c.x_reference = memory_capacity_gib;
  c.x_reference_label = fmt::format("device memory {:.0f} GiB", memory_capacity_gib);
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const planner::Prediction& q = plans[i].prediction;
    c.points.push_back({q.peak_memory_gib, q.iteration_s, on_front[i],
                        fmt::format("{}: {:.4g} s, {:.1f} GiB", strategy_label(plans[i].strategy), q.iteration_s,
                                    q.peak_memory_gib)});
  }
  return fmt::format("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>strata front: {0}</title>"
                     "</head>\n<body style=\"font-family:sans-serif\">\n<h1>{0}</h1>\n{1}\n<pre>{2}</pre>\n"
                     "<p>Generated by strata plan --front.</p>\n</body></html>\n",
                     svg::escape(title), svg::scatter_chart(c),
                     svg::escape(format_pareto_table(plans, memory_capacity_gib)));
}

}  // namespace strata::report
