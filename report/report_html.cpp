#include "report/report_html.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

namespace strata::report {
namespace {

using svg::escape;

// Tableau-10 colours: distinguishable, and readable on white.
constexpr const char* kCompute = "#4e79a7";
constexpr const char* kForward = "#4e79a7";
constexpr const char* kBackward = "#59a14f";
constexpr const char* kTpComm = "#f28e2b";
constexpr const char* kPpComm = "#e15759";
constexpr const char* kDpComm = "#76b7b2";
constexpr const char* kOptimizer = "#b07aa1";
constexpr const char* kBubble = "#bab0ac";
constexpr const char* kOther = "#9c755f";
constexpr const char* kCpComm = "#edc948";
constexpr const char* kEpComm = "#ff9da7";
constexpr const char* kStraggler = "#6b6b6b";
constexpr const char* kHostWait = "#a07a4a";

constexpr int kChartWidth = 1280;  // fits the page; CSS scales it down on narrow screens

constexpr const char* kCss = R"css(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
       margin: 0 auto; padding: 16px 20px 40px; max-width: 1340px; background: #fafafa; }
h1 { font-size: 24px; margin: 8px 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
p.sub { color: #555; margin: 0 0 8px; }
p.summary { font-size: 15px; background: #fff; border-left: 4px solid #4e79a7; padding: 8px 12px; }
svg { max-width: 100%; height: auto; display: block; }
.card { background: #fff; border: 1px solid #e3e3e3; border-radius: 6px; padding: 8px; overflow-x: auto; }
table { border-collapse: collapse; font-size: 12.5px; width: 100%; }
th, td { padding: 4px 5px; border-bottom: 1px solid #eee; text-align: right; white-space: nowrap; }
th { background: #f0f2f5; font-weight: 600; position: sticky; top: 0; }
td.l, th.l { text-align: left; }
tr.best td { background: #fff8dc; font-weight: 600; }
tr.over td { color: #b00; }
.memcell { display: inline-block; width: 40px; height: 8px; background: #eee; border-radius: 2px;
           vertical-align: middle; margin-left: 6px; position: relative; overflow: hidden; }
.memcell span { position: absolute; left: 0; top: 0; bottom: 0; background: #4e79a7; }
.memcell span.hot { background: #e15759; }
.bad { color: #b00; font-weight: 600; }
details { margin: 8px 0; }
summary { cursor: pointer; font-weight: 600; padding: 4px 0; }
ul.notes { color: #555; font-size: 13px; }
pre.cmd { background: #fff; border: 1px solid #e3e3e3; border-radius: 6px; padding: 8px 12px; font-size: 12.5px;
          white-space: pre-wrap; overflow-wrap: anywhere; }
footer { color: #888; font-size: 12px; margin-top: 32px; }
)css";

std::string short_label(std::size_t index, const planner::Strategy& s) {
  std::string out = fmt::format("#{} {} mbs{}", index + 1, parallel_dims_label(s), s.micro_batch);
  if (s.vpp > 1) out += fmt::format(" vpp{}", s.vpp);
  if (s.zero > 0) out += fmt::format(" z{}", s.zero);
  if (s.recompute == planner::Recompute::Selective) out += " sel";
  if (s.recompute == planner::Recompute::Full) out += " full";
  if (s.sequence_parallel) out += " sp";
  if (s.pp > 1 && s.schedule == planner::ScheduleKind::GPipe) out += " gpipe";
  if (!s.precision.empty()) out += " " + s.precision;
  return out;
}

// Time unit for a chart whose largest value is `max_s`.
struct TimeUnit {
  double scale;
  const char* name;
};
TimeUnit time_unit(double max_s) {
  if (max_s < 1e-3) return {1e6, "us"};
  if (max_s < 1.0) return {1e3, "ms"};
  return {1.0, "s"};
}

double max_iteration(const ReportData& d) {
  double m = 0;
  for (const auto& e : d.entries) {
    if (std::isfinite(e.prediction.iteration_s)) m = std::max(m, e.prediction.iteration_s);
    if (e.measured && e.measured->status == "ok") m = std::max(m, e.measured->step_s);
  }
  return m;
}

// Lanes of a stage, top to bottom: compute, then the exchanges inside its steps (right
// under the steps they belong to), then the streams beside them.
int stream_order(const std::string& s) {
  static const std::map<std::string, int> order{{"compute", 0}, {"ep_comm", 1}, {"cp_comm", 2}, {"tp_comm", 3},
                                                {"pp_comm", 4}, {"dp_comm", 5}, {"optimizer", 6}};
  auto it = order.find(s);
  return it == order.end() ? 7 : it->second;
}

std::string event_color(const planner::TimelineEvent& ev) {
  if (ev.stream == "compute") {
    if (!ev.name.empty() && ev.name[0] == 'F') return kForward;
    if (!ev.name.empty() && ev.name[0] == 'B') return kBackward;
    return kCompute;
  }
  if (ev.stream == "tp_comm") return kTpComm;
  if (ev.stream == "pp_comm") return kPpComm;
  if (ev.stream == "dp_comm") return kDpComm;
  if (ev.stream == "optimizer") return kOptimizer;
  if (ev.stream == "ep_comm") return kEpComm;
  if (ev.stream == "cp_comm") return kCpComm;
  return kOther;
}

std::string table_html(const ReportData& d) {
  const bool measured = std::any_of(d.entries.begin(), d.entries.end(),
                                    [](const ReportEntry& e) { return e.measured.has_value(); });
  const int best = best_entry(d);
  const bool experts = any_experts(d);
  const bool a2a = experts || std::any_of(d.entries.begin(), d.entries.end(), [](const ReportEntry& e) {
                     return e.prediction.breakdown_s.ep_comm > 0;
                   });
  std::string out = "<div class=\"card\"><table>\n<thead><tr><th>#</th>"
                    "<th>tp</th><th>pp</th><th>dp</th><th>cp</th>";
  if (experts) out += "<th>ep</th><th>etp</th>";
  out += "<th>vpp</th><th>mbs</th><th>zero</th>"
         "<th class=\"l\">recompute</th><th class=\"l\">sp</th><th class=\"l\">schedule</th>"
         "<th>step time</th>";
  const bool band = any_band(d);
  if (band) out += "<th>likely range</th>";
  if (measured) out += "<th>measured</th><th>error</th>";
  out += "<th>tokens/s</th><th>TFLOP/s/GPU</th><th>MFU</th><th>memory/GPU</th><th>bubble</th>"
         "<th>TP comm</th><th>CP comm</th><th>PP comm</th><th>DP comm</th>";
  if (a2a) out += "<th>EP comm (all-to-all)</th>";
  const bool ttt = d.target.given();
  const bool cost = ttt && d.target.gpu_hour_price > 0;
  if (ttt) out += "<th>days to train</th><th>GPU-hours</th>";
  if (cost) out += "<th>cost</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (std::size_t i = 0; i < d.entries.size(); ++i) {
    const auto& e = d.entries[i];
    const auto& s = e.strategy;
    const auto& p = e.prediction;
    std::string cls;
    if (static_cast<int>(i) == best) cls = "best";
    if (!p.fits_memory) cls += cls.empty() ? "over" : " over";
    out += cls.empty() ? "<tr>" : fmt::format("<tr class=\"{}\">", cls);
    out += fmt::format("<td title=\"{}\">{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                       escape(strategy_label(s)), i + 1, static_cast<int>(i) == best ? " ★" : "", s.tp,
                       s.pp, s.dp, s.cp);
    if (experts) out += fmt::format("<td>{}</td><td>{}</td>", s.ep, s.etp);
    out += fmt::format(
        "<td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>"
        "<td>{}</td>",
        s.vpp, s.micro_batch, s.zero, recompute_label(s), s.sequence_parallel ? "yes" : "no",
        s.pp > 1 ? schedule_name(s.schedule) : "–", escape(format_seconds(p.iteration_s)));
    if (band) out += fmt::format("<td>{}</td>", escape(format_likely_range(p)));
    if (measured) {
      if (!e.measured) {
        out += "<td>–</td><td>–</td>";
      } else if (e.measured->status != "ok") {
        out += fmt::format("<td class=\"bad\" title=\"{}\">{}</td><td>–</td>",
                           escape(e.measured->error), escape(e.measured->status));
      } else {
        out += fmt::format("<td>{}</td><td>{:.1f}%</td>", escape(format_seconds(e.measured->step_s)),
                           abs_error_pct(p.iteration_s, e.measured->step_s));
      }
    }
    const double frac = d.device_memory_gib > 0 ? p.peak_memory_gib / d.device_memory_gib : 0;
    std::string mem = escape(format_gib(p.peak_memory_gib));
    if (d.device_memory_gib > 0)
      mem += fmt::format(
          "<span class=\"memcell\" title=\"{:.0f}% of {:.0f} GiB\"><span{} style=\"width:{:.0f}%\">"
          "</span></span>",
          frac * 100, d.device_memory_gib, p.fits_memory ? "" : " class=\"hot\"",
          std::clamp(frac, 0.0, 1.0) * 100);
    const auto& b = p.breakdown_s;
    out += fmt::format(
        "<td>{}</td><td>{:.4g}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td>",
        escape(format_count(p.tokens_per_s)), p.model_tflops_per_gpu, escape(format_percent(p.mfu)), mem,
        escape(format_percent(p.bubble_fraction)), escape(format_seconds(b.tp_comm)),
        escape(format_seconds(b.cp_comm)), escape(format_seconds(b.pp_comm)), escape(format_seconds(b.dp_comm)));
    if (a2a) out += fmt::format("<td>{}</td>", escape(format_seconds(b.ep_comm)));
    if (ttt) {
      const TimeToTrain t = time_to_train(s, p, d.seq_len, d.target);
      out += fmt::format("<td>{}</td><td>{}</td>", escape(format_ranged_days(t.days, t.banded)),
                         escape(format_gpu_hours(t.gpu_hours.value)));
      if (cost) out += fmt::format("<td>{}</td>", escape(format_usd(t.cost_usd.value)));
    }
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
  return out;
}

}  // namespace

int pipelined_showcase(const ReportData& d) {
  const int best = best_entry(d);
  if (best < 0 || d.entries[static_cast<std::size_t>(best)].strategy.pp > 1) return -1;
  auto better = [](const ReportEntry& a, const ReportEntry& b) {
    if (a.prediction.fits_memory != b.prediction.fits_memory) return a.prediction.fits_memory;
    return a.prediction.iteration_s < b.prediction.iteration_s;
  };
  int pick = -1;
  for (std::size_t i = 0; i < d.entries.size(); ++i) {
    if (d.entries[i].strategy.pp <= 1) continue;
    if (pick < 0 || better(d.entries[i], d.entries[static_cast<std::size_t>(pick)])) pick = static_cast<int>(i);
  }
  return pick;
}

namespace {

// The parts of the step the breakdown chart stacks: every planner::Breakdown component
// (CP, EP and straggler segments only when some entry has them), in the order of the table.
struct Segment {
  const char* name;
  const char* color;
  double planner::Breakdown::*part;
};

std::vector<Segment> breakdown_segments(const ReportData& d) {
  using B = planner::Breakdown;
  auto any = [&](double B::*part) {
    return std::any_of(d.entries.begin(), d.entries.end(),
                       [&](const ReportEntry& e) { return e.prediction.breakdown_s.*part > 0; });
  };
  std::vector<Segment> out{{"compute", kCompute, &B::compute}, {"TP comm", kTpComm, &B::tp_comm}};
  if (any(&B::cp_comm)) out.push_back({"CP comm", kCpComm, &B::cp_comm});
  out.push_back({"PP comm", kPpComm, &B::pp_comm});
  out.push_back({"DP comm", kDpComm, &B::dp_comm});
  if (any(&B::ep_comm)) out.push_back({"EP comm (all-to-all)", kEpComm, &B::ep_comm});
  if (any(&B::straggler)) out.push_back({"stragglers", kStraggler, &B::straggler});
  if (any(&B::host_wait)) out.push_back({"host wait (MoE sync)", kHostWait, &B::host_wait});
  out.push_back({"optimizer", kOptimizer, &B::optimizer});
  out.push_back({"bubble", kBubble, &B::bubble});
  return out;
}

}  // namespace

svg::StackedBarChart breakdown_chart(const ReportData& d) {
  const TimeUnit u = time_unit(max_iteration(d));
  svg::StackedBarChart c;
  c.title = "Step time breakdown (critical path of one iteration)";
  c.axis_label = fmt::format("time per iteration ({})", u.name);
  const std::vector<Segment> segments = breakdown_segments(d);
  for (const auto& g : segments) c.series.push_back({g.name, g.color});
  auto sum_of = [&](const planner::Breakdown& b) {
    double sum = 0;
    for (const auto& g : segments) sum += b.*g.part;
    return sum;
  };
  bool need_other = false;
  for (const auto& e : d.entries) {
    const double rest = e.prediction.iteration_s - sum_of(e.prediction.breakdown_s);
    if (rest > 1e-3 * e.prediction.iteration_s) need_other = true;
  }
  if (need_other) c.series.push_back({"other", kOther});
  for (std::size_t i = 0; i < d.entries.size(); ++i) {
    const auto& e = d.entries[i];
    const auto& b = e.prediction.breakdown_s;
    svg::StackedBarRow row;
    row.label = short_label(i, e.strategy);
    for (const auto& g : segments) row.values.push_back(b.*g.part * u.scale);
    if (need_other) row.values.push_back(std::max(0.0, e.prediction.iteration_s - sum_of(b)) * u.scale);
    if (e.measured && e.measured->status == "ok") {
      row.marker = e.measured->step_s * u.scale;
      row.marker_label = "measured";
    }
    c.rows.push_back(std::move(row));
  }
  const std::string unit = u.name;
  c.format = [unit](double v) { return fmt::format("{:.3g} {}", v, unit); };
  c.label_width = 300;
  c.width = kChartWidth;
  return c;
}

svg::GroupedBarChart memory_chart(const ReportData& d) {
  svg::GroupedBarChart c;
  c.title = "Memory per pipeline stage (max over its ranks) vs device capacity";
  c.axis_label = "GiB per GPU";
  for (std::size_t i = 0; i < d.entries.size(); ++i) {
    const auto& p = d.entries[i].prediction;
    svg::BarGroup g;
    g.label = fmt::format("#{} {}", i + 1, parallel_dims_label(d.entries[i].strategy));
    if (p.stage_memory_gib.empty()) {
      g.values = {p.peak_memory_gib};
      g.bar_labels = {"all"};
    } else {
      g.values = p.stage_memory_gib;
      for (std::size_t s = 0; s < p.stage_memory_gib.size(); ++s)
        g.bar_labels.push_back(fmt::format("s{}", s));
    }
    c.groups.push_back(std::move(g));
  }
  // The planner's per-stage memory already counts the device's reserve (workspace,
  // fragmentation), so a stage fits when its bar stays under the capacity line.
  if (d.device_memory_gib > 0) {
    c.reference = d.device_memory_gib;
    c.reference_label = fmt::format("capacity {:.0f} GiB", d.device_memory_gib);
  }
  if (d.device_reserve_gib > 0)
    c.title += fmt::format(" (bars include the {:.0f} GiB reserve)", d.device_reserve_gib);
  c.format = [](double v) { return fmt::format("{:.3g}", v); };
  c.width = kChartWidth;
  return c;
}

svg::GanttChart timeline_chart(const ReportEntry& e, const std::string& title) {
  svg::GanttChart c;
  c.title = title;
  const TimeUnit u = time_unit(e.prediction.iteration_s > 0 ? e.prediction.iteration_s : 1.0);
  c.axis_label = fmt::format("time ({})", u.name);
  std::set<std::pair<int, std::pair<int, std::string>>> keys;  // (stage, (order, stream))
  for (const auto& ev : e.timeline) keys.insert({ev.stage, {stream_order(ev.stream), ev.stream}});
  std::map<std::pair<int, std::string>, int> row_of;
  for (const auto& k : keys) {
    row_of[{k.first, k.second.second}] = static_cast<int>(c.rows.size());
    c.rows.push_back(fmt::format("stage {} · {}", k.first, k.second.second));
  }
  std::set<std::string> colors_used;
  for (const auto& ev : e.timeline) {
    svg::GanttBar b;
    b.row = row_of[{ev.stage, ev.stream}];
    b.start = ev.start_s * u.scale;
    b.end = ev.end_s * u.scale;
    b.color = event_color(ev);
    colors_used.insert(b.color);
    if (ev.stream == "compute" && ev.microbatch >= 0 && !ev.name.empty())
      b.label = fmt::format("{}{}", ev.name[0], ev.microbatch);
    b.tooltip = fmt::format("stage {} {}: {} ({:.4g}–{:.4g} {})", ev.stage, ev.stream, ev.name,
                            b.start, b.end, u.name);
    c.bars.push_back(std::move(b));
  }
  const std::vector<svg::Series> all{{"forward", kForward},
                                     {"backward", kBackward},
                                     {"EP all-to-all (in the step)", kEpComm},
                                     {"CP K/V exchange (in the step)", kCpComm},
                                     {"TP comm", kTpComm},
                                     {"PP send/recv", kPpComm},
                                     {"DP grad sync", kDpComm},
                                     {"optimizer", kOptimizer},
                                     {"other", kOther}};
  for (const auto& s : all)
    if (colors_used.count(s.color)) c.legend.push_back(s);
  c.end_time = e.prediction.iteration_s * u.scale;
  c.format = [](double v) { return svg::format_tick(std::round(v * 1e4) / 1e4); };
  c.label_width = 150;
  c.width = kChartWidth;
  c.row_height = e.timeline.empty() ? 18 : (c.rows.size() > 24 ? 14 : 18);
  return c;
}

std::string report_html(const ReportData& d) {
  const int best = best_entry(d);
  const std::string title = fmt::format("strata compare: {} on {} ({} GPUs)", d.model, d.cluster, d.gpus);
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n",
      escape(title), kCss);
  out += fmt::format("<h1>{}</h1>\n", escape(title));
  std::string sub = fmt::format("model <b>{}</b> · cluster <b>{}</b>", escape(d.model), escape(d.cluster));
  if (!d.device.empty())
    sub += fmt::format(" · device <b>{}</b> ({:.0f} GiB)", escape(d.device), d.device_memory_gib);
  if (!d.entries.empty())
    sub += fmt::format(" · global batch {} × seq {}", d.entries.front().strategy.global_batch, d.seq_len);
  if (!d.origin.empty()) sub += fmt::format(" · strategies: {}", escape(d.origin));
  out += fmt::format("<p class=\"sub\">{}</p>\n", sub);

  if (best >= 0) {
    const auto& e = d.entries[static_cast<std::size_t>(best)];
    out += fmt::format(
        "<p class=\"summary\">Fastest predicted{}: <b>#{} {}</b> at <b>{}</b>{} per iteration, {} "
        "tokens/s, {:.4g} TFLOP/s per GPU ({} MFU), peak memory {} per GPU.</p>\n",
        e.prediction.fits_memory ? "" : " (none fits memory)", best + 1,
        escape(strategy_label(e.strategy)), escape(format_seconds(e.prediction.iteration_s)),
        e.prediction.uncertainty >= 0
            ? fmt::format(" (likely {})", escape(format_likely_range(e.prediction)))
            : std::string(),
        escape(format_count(e.prediction.tokens_per_s)), e.prediction.model_tflops_per_gpu,
        escape(format_percent(e.prediction.mfu)), escape(format_gib(e.prediction.peak_memory_gib)));
  }

  if (best >= 0 && d.target.given()) {
    const auto& e = d.entries[static_cast<std::size_t>(best)];
    out += fmt::format("<p class=\"summary\">Time to train with #{}: {}.</p>\n", best + 1,
                       escape(describe_time_to_train(
                           time_to_train(e.strategy, e.prediction, d.seq_len, d.target))));
  }
  out += "<h2>Strategies side by side</h2>\n" + table_html(d);
  if (const std::string conditions = measured_conditions(d); !d.measured_origin.empty())
    out += fmt::format("<p class=\"sub\">Measured: median step time after warm-up, from {}{}.</p>\n",
                       escape(d.measured_origin),
                       conditions.empty() ? "" : ", " + escape(conditions));

  out += "<h2>Step time breakdown</h2>\n<div class=\"card\">" +
         svg::stacked_bar_chart(breakdown_chart(d)) + "</div>\n";
  out += "<h2>Memory per pipeline stage</h2>\n<div class=\"card\">" +
         svg::grouped_bar_chart(memory_chart(d)) + "</div>\n";

  out += "<h2>Simulated pipeline timeline</h2>\n";
  bool any_timeline = false;
  if (best >= 0 && !d.entries[static_cast<std::size_t>(best)].timeline.empty()) {
    const auto& e = d.entries[static_cast<std::size_t>(best)];
    out += "<div class=\"card\">" +
           svg::gantt_chart(timeline_chart(
               e, fmt::format("#{} {} (best): one iteration", best + 1, strategy_label(e.strategy)))) +
           "</div>\n";
    any_timeline = true;
  }
  // When the best strategy has no pipeline, the fastest pipelined one is shown open too.
  const int showcase = pipelined_showcase(d);
  for (std::size_t i = 0; i < d.entries.size(); ++i) {
    if (static_cast<int>(i) == best || d.entries[i].timeline.empty()) continue;
    const auto& e = d.entries[i];
    out += fmt::format("<details{}><summary>#{} {} ({})</summary><div class=\"card\">{}</div></details>\n",
                       static_cast<int>(i) == showcase ? " open" : "", i + 1, escape(strategy_label(e.strategy)),
                       escape(format_seconds(e.prediction.iteration_s)),
                       svg::gantt_chart(timeline_chart(
                           e, fmt::format("#{} {}: one iteration", i + 1, strategy_label(e.strategy)))));
    any_timeline = true;
  }
  if (!any_timeline) out += "<p class=\"sub\">No timeline was recorded.</p>\n";

  if (!d.command_line.empty())
    out += fmt::format("<h2>Reproduce this report</h2>\n<pre class=\"cmd\"><code>{}</code></pre>\n",
                       escape(d.command_line));

  std::set<std::string> notes(d.notes.begin(), d.notes.end());
  for (const auto& e : d.entries)
    for (const auto& n : e.prediction.notes) notes.insert(n);
  if (!notes.empty()) {
    out += "<h2>Where the numbers come from</h2>\n<ul class=\"notes\">\n";
    for (const auto& n : notes) out += fmt::format("<li>{}</li>\n", escape(n));
    out += "</ul>\n";
  }
  out += "<footer>Generated by strata compare. Self-contained page: inline CSS and SVG, no scripts. "
         "Hover a bar for its value.</footer>\n</body>\n</html>\n";
  return out;
}

}  // namespace strata::report
