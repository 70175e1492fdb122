#include "report/report_markdown.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/one_line.h"

namespace strata::report {

namespace {

// A fenced code block holding `text` as is: the fence is longer than any run of backticks
// in it (CommonMark closes a fence only with at least as many), so a backtick in an
// argument cannot end the block early.
std::string fenced(const std::string& text, const std::string& language) {
  std::size_t run = 0, longest = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(std::max<std::size_t>(3, longest + 1), '`');
  return fence + language + "\n" + text + "\n" + fence + "\n";
}

}  // namespace

std::string report_markdown(const ReportData& d) {
  const bool measured = std::any_of(d.entries.begin(), d.entries.end(),
                                    [](const ReportEntry& e) { return e.measured.has_value(); });
  const int best = best_entry(d);
  // Names may come from user files: one_line keeps a newline in them inside the heading.
  std::string out = fmt::format("### strata compare: {} on {} ({} GPUs{})\n\n", one_line(d.model),
                                one_line(d.cluster), d.gpus,
                                d.device.empty() ? "" : ", " + one_line(d.device));
  if (!d.origin.empty()) out += fmt::format("Strategies: {}.", d.origin);
  if (!d.entries.empty())
    out += fmt::format(" Global batch {} × seq {}.", d.entries.front().strategy.global_batch, d.seq_len);
  out += "\n\n";

  // Columns: the layout (every parallel dimension; ep / etp only when some entry uses
  // them), the prediction, the breakdown (CP and EP communication as their own columns
  // when present), then time to train when asked.
  const bool experts = any_experts(d);
  const bool cp = any_context_parallel(d);
  const bool a2a = experts || std::any_of(d.entries.begin(), d.entries.end(), [](const ReportEntry& e) {
                     return e.prediction.breakdown_s.ep_comm > 0;
                   });
  const bool stragglers = std::any_of(d.entries.begin(), d.entries.end(), [](const ReportEntry& e) {
    return e.prediction.breakdown_s.straggler > 0;
  });
  const bool host_wait = std::any_of(d.entries.begin(), d.entries.end(), [](const ReportEntry& e) {
    return e.prediction.breakdown_s.host_wait > 0;
  });
  const bool precision = std::any_of(d.entries.begin(), d.entries.end(),
                                     [](const ReportEntry& e) { return !e.strategy.precision.empty(); });
  const bool ttt = d.target.given();
  const bool cost = ttt && d.target.gpu_hour_price > 0;
  std::vector<std::pair<std::string, std::string>> cols{{"#", "--:"}, {"tp", "--:"}, {"pp", "--:"},
                                                        {"dp", "--:"}, {"cp", "--:"}};
  if (experts) cols.insert(cols.end(), {{"ep", "--:"}, {"etp", "--:"}});
  cols.insert(cols.end(), {{"vpp", "--:"}, {"mbs", "--:"}, {"zero", "--:"}, {"recompute", "---"},
                           {"sp", "---"}, {"schedule", "---"}});
  if (precision) cols.emplace_back("precision", "---");
  cols.emplace_back("step time", "--:");
  const bool band = any_band(d);
  if (band) cols.emplace_back("likely range", "--:");
  if (measured) cols.insert(cols.end(), {{"measured", "--:"}, {"error", "--:"}});
  cols.insert(cols.end(), {{"tokens/s", "--:"}, {"TFLOP/s/GPU", "--:"}, {"MFU", "--:"},
                           {"memory/GPU", "--:"}, {"bubble", "--:"}, {"compute", "--:"},
                           {"TP comm", "--:"}});
  if (cp) cols.emplace_back("CP comm", "--:");
  cols.insert(cols.end(), {{"PP comm", "--:"}, {"DP comm", "--:"}});
  if (a2a) cols.emplace_back("EP comm (all-to-all)", "--:");
  if (stragglers) cols.emplace_back("stragglers", "--:");
  if (host_wait) cols.emplace_back("host wait", "--:");
  cols.emplace_back("optimizer", "--:");
  if (ttt) cols.insert(cols.end(), {{"days", "--:"}, {"GPU-hours", "--:"}});
  if (cost) cols.emplace_back("cost", "--:");
  out += "|";
  for (const auto& c : cols) out += " " + c.first + " |";
  out += "\n|";
  for (const auto& c : cols) out += c.second + "|";
  out += "\n";

  for (std::size_t i = 0; i < d.entries.size(); ++i) {
    const auto& e = d.entries[i];
    const auto& s = e.strategy;
    const auto& p = e.prediction;
    const auto& b = p.breakdown_s;
    std::vector<std::string> row{fmt::format("{}{}", i + 1, static_cast<int>(i) == best ? " ★" : ""),
                                 std::to_string(s.tp), std::to_string(s.pp), std::to_string(s.dp),
                                 std::to_string(s.cp)};
    if (experts) row.insert(row.end(), {std::to_string(s.ep), std::to_string(s.etp)});
    row.insert(row.end(), {std::to_string(s.vpp), std::to_string(s.micro_batch), std::to_string(s.zero),
                           recompute_label(s), s.sequence_parallel ? "yes" : "no",
                           s.pp > 1 ? schedule_name(s.schedule) : "–"});
    if (precision) row.push_back(s.precision.empty() ? (p.precision.empty() ? "–" : p.precision) : s.precision);
    row.push_back(format_seconds(p.iteration_s));
    if (band) row.push_back(format_likely_range(p));
    if (measured) {
      if (!e.measured) {
        row.insert(row.end(), {"–", "–"});
      } else if (e.measured->status != "ok") {
        row.insert(row.end(), {e.measured->status, "–"});
      } else {
        row.insert(row.end(), {format_seconds(e.measured->step_s),
                               fmt::format("{:.1f}%", abs_error_pct(p.iteration_s, e.measured->step_s))});
      }
    }
    std::string mem = format_gib(p.peak_memory_gib);
    if (d.device_memory_gib > 0) mem += fmt::format(" / {:.0f}", d.device_memory_gib);
    if (!p.fits_memory) mem += " **over**";
    row.insert(row.end(), {format_count(p.tokens_per_s), fmt::format("{:.4g}", p.model_tflops_per_gpu),
                           format_percent(p.mfu), mem, format_percent(p.bubble_fraction),
                           format_seconds(b.compute), format_seconds(b.tp_comm)});
    if (cp) row.push_back(format_seconds(b.cp_comm));
    row.insert(row.end(), {format_seconds(b.pp_comm), format_seconds(b.dp_comm)});
    if (a2a) row.push_back(format_seconds(b.ep_comm));
    if (stragglers) row.push_back(format_seconds(b.straggler));
    if (host_wait) row.push_back(format_seconds(b.host_wait));
    row.push_back(format_seconds(b.optimizer));
    if (ttt) {
      const TimeToTrain t = time_to_train(s, p, d.seq_len, d.target);
      row.insert(row.end(), {format_ranged_days(t.days, t.banded), format_gpu_hours(t.gpu_hours.value)});
      if (cost) row.push_back(format_usd(t.cost_usd.value));
    }
    out += "|";
    for (const auto& c : row) out += " " + one_line(c) + " |";
    out += "\n";
  }
  const bool none_fits = best >= 0 && !d.entries[static_cast<std::size_t>(best)].prediction.fits_memory;
  out += none_fits ? "\n★ fastest predicted strategy; **none of them fits memory**." : "\n★ fastest predicted strategy that fits memory.";
  out += " Step time is one iteration (ranked by it; "
         "the likely range, where shown, is the step time scaled by how far published runs of the "
         "same stack and device fell from their predictions); "
         "compute/comm columns are time on the critical path; TFLOP/s/GPU counts model FLOPs.";
  if (ttt && best >= 0) {
    const auto& e = d.entries[static_cast<std::size_t>(best)];
    out += " Time to train (★): " +
           describe_time_to_train(time_to_train(e.strategy, e.prediction, d.seq_len, d.target)) + ".";
  }
  if (const std::string conditions = measured_conditions(d); measured && !d.measured_origin.empty())
    out += fmt::format(" Measured: median step time from `{}`{}.", d.measured_origin,
                       conditions.empty() ? "" : ", " + one_line(conditions));
  out += "\n";
  if (!d.command_line.empty()) out += "\nReproduce this report:\n\n" + fenced(d.command_line, "sh");
  for (const auto& n : d.notes) out += fmt::format("\n- {}", n);
  if (!d.notes.empty()) out += "\n";
  return out;
}

}  // namespace strata::report
