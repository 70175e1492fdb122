#include "report/report_markdown.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/one_line.h"

namespace strata::report {

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

  out += "| # | tp | pp | dp | vpp | mbs | zero | recompute | sp | schedule | step time |";
  if (measured) out += " measured | error |";
  out += " tokens/s | TFLOP/s/GPU | MFU | memory/GPU | bubble | compute | TP comm | PP comm | DP comm | optimizer |\n";
  out += "|--:|--:|--:|--:|--:|--:|--:|---|---|---|--:|";
  if (measured) out += "--:|--:|";
  out += "--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n";

  for (std::size_t i = 0; i < d.entries.size(); ++i) {
    const auto& e = d.entries[i];
    const auto& s = e.strategy;
    const auto& p = e.prediction;
    const auto& b = p.breakdown_s;
    out += fmt::format("| {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |", i + 1,
                       static_cast<int>(i) == best ? " ★" : "", s.tp, s.pp, s.dp, s.vpp,
                       s.micro_batch, s.zero, recompute_name(s.recompute),
                       s.sequence_parallel ? "yes" : "no", s.pp > 1 ? schedule_name(s.schedule) : "–",
                       format_seconds(p.iteration_s));
    if (measured) {
      if (!e.measured) {
        out += " – | – |";
      } else if (e.measured->status != "ok") {
        out += fmt::format(" {} | – |", e.measured->status);
      } else {
        out += fmt::format(" {} | {:.1f}% |", format_seconds(e.measured->step_s),
                           abs_error_pct(p.iteration_s, e.measured->step_s));
      }
    }
    std::string mem = format_gib(p.peak_memory_gib);
    if (d.device_memory_gib > 0) mem += fmt::format(" / {:.0f}", d.device_memory_gib);
    if (!p.fits_memory) mem += " **over**";
    out += fmt::format(" {} | {:.4g} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                       format_count(p.tokens_per_s), p.model_tflops_per_gpu, format_percent(p.mfu),
                       mem, format_percent(p.bubble_fraction), format_seconds(b.compute),
                       format_seconds(b.tp_comm), format_seconds(b.pp_comm),
                       format_seconds(b.dp_comm), format_seconds(b.optimizer));
  }
  out += "\n★ fastest predicted strategy that fits memory. Step time is one iteration; "
         "compute/comm columns are time on the critical path; TFLOP/s/GPU counts model FLOPs.";
  if (measured && !d.measured_origin.empty())
    out += fmt::format(" Measured: median step time from `{}`.", d.measured_origin);
  out += "\n";
  for (const auto& n : d.notes) out += fmt::format("\n- {}", n);
  if (!d.notes.empty()) out += "\n";
  return out;
}

}  // namespace strata::report
