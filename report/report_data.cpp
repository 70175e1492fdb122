#include "report/report_data.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "costmodel/recompute_modules.h"

namespace strata::report {

std::string measured_conditions(const ReportData& data) {
  double lo = INFINITY, hi = -INFINITY;
  int busy = 0;
  for (const auto& e : data.entries) {
    if (!e.measured || e.measured->host_load_1m < 0) continue;
    lo = std::min(lo, e.measured->host_load_1m);
    hi = std::max(hi, e.measured->host_load_1m);
    busy += data.measured_host_cores > 0 && e.measured->host_load_1m > data.measured_host_cores;
  }
  std::string out;
  if (!data.measured_host.empty())
    out = "on " + data.measured_host +
          (data.measured_host_cores > 0 ? fmt::format(" ({} cores)", data.measured_host_cores) : "");
  if (hi >= 0)
    out += fmt::format("{}host load {:.1f} .. {:.1f} (1-minute average after each run)", out.empty() ? "" : "; ",
                       lo, hi);
  if (busy > 0)
    out += fmt::format("; warning: the load exceeded the {} cores after {} run{}: those runs shared the machine "
                       "and their step times are slower than an idle host's",
                       data.measured_host_cores, busy, busy == 1 ? "" : "s");
  return out;
}

int best_entry(const ReportData& data) {
  int best = -1;
  bool any_fit = false;
  for (const auto& e : data.entries) any_fit = any_fit || e.prediction.fits_memory;
  for (std::size_t i = 0; i < data.entries.size(); ++i) {
    const auto& e = data.entries[i];
    if (any_fit && !e.prediction.fits_memory) continue;
    if (best < 0 || e.prediction.iteration_s <
                        data.entries[static_cast<std::size_t>(best)].prediction.iteration_s)
      best = static_cast<int>(i);
  }
  return best;
}

const char* schedule_name(planner::ScheduleKind k) { return planner::to_string(k); }

const char* recompute_name(planner::Recompute r) { return planner::to_string(r); }

std::string recompute_label(const planner::Strategy& s) {
  std::string out = planner::to_string(s.recompute);
  if (s.recompute == planner::Recompute::Full && s.recompute_layers > 0)
    out += fmt::format(":{}/chunk", s.recompute_layers);
  if (s.recompute_modules.megatron())
    out += fmt::format(":{}", fmt::join(costmodel::recompute_module_names(s.recompute_modules), ","));
  return out;
}

std::string strategy_label(const planner::Strategy& s) {
  std::string out = parallel_dims_label(s) + fmt::format(" · mbs {}", s.micro_batch);
  if (s.vpp > 1) out += fmt::format(" · vpp {}", s.vpp);
  if (s.zero > 0) out += fmt::format(" · zero {}", s.zero);
  if (s.recompute == planner::Recompute::Selective) out += " · sel-recompute";
  if (s.recompute == planner::Recompute::Full) out += " · full-recompute";
  if (s.sequence_parallel) out += " · sp";
  if (s.ep_overlap) out += " · ep-overlap";
  if (s.delay_wgrad) out += " · delay-wgrad";
  if (s.pp > 1) out += fmt::format(" · {}", schedule_name(s.schedule));
  if (!s.precision.empty()) out += fmt::format(" · {}", s.precision);
  return out;
}

std::string parallel_dims_label(const planner::Strategy& s) {
  std::string out = fmt::format("tp{} pp{} dp{}", s.tp, s.pp, s.dp);
  if (s.cp > 1) out += fmt::format(" cp{}", s.cp);
  if (s.ep > 1) out += fmt::format(" ep{}", s.ep);
  if (s.etp > 1) out += fmt::format(" etp{}", s.etp);
  return out;
}

bool any_experts(const ReportData& d) {
  return std::any_of(d.entries.begin(), d.entries.end(),
                     [](const ReportEntry& e) { return e.strategy.ep * e.strategy.etp > 1; });
}

bool any_context_parallel(const ReportData& d) {
  return std::any_of(d.entries.begin(), d.entries.end(), [](const ReportEntry& e) {
    return e.strategy.cp > 1 || e.prediction.breakdown_s.cp_comm > 0;
  });
}

std::string format_seconds(double s) {
  if (!std::isfinite(s)) return "n/a";
  const double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a < 1e-3) return fmt::format("{:.3g} us", s * 1e6);
  if (a < 1.0) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} s", s);
}

std::string format_likely_range(const planner::Prediction& p) {
  if (p.uncertainty < 0) return "–";
  return fmt::format("{} – {}", format_seconds(p.iteration_s * p.uncertainty_low),
                     format_seconds(p.iteration_s * p.uncertainty_high));
}

bool any_band(const ReportData& d) {
  return std::any_of(d.entries.begin(), d.entries.end(),
                     [](const ReportEntry& e) { return e.prediction.uncertainty >= 0; });
}

std::string format_count(double v) {
  if (!std::isfinite(v)) return "n/a";
  const double a = std::fabs(v);
  if (a >= 1e9) return fmt::format("{:.3g}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (a >= 1e3) return fmt::format("{:.3g}k", v / 1e3);
  return fmt::format("{:.3g}", v);
}

std::string format_gib(double gib) {
  if (!std::isfinite(gib)) return "n/a";
  return fmt::format("{:.1f} GiB", gib);
}

std::string format_percent(double fraction) {
  if (!std::isfinite(fraction)) return "n/a";
  return fmt::format("{:.1f}%", fraction * 100);
}

double abs_error_pct(double predicted_s, double measured_s) {
  if (!(measured_s > 0) || !std::isfinite(predicted_s)) return NAN;
  return std::fabs(predicted_s - measured_s) / measured_s * 100.0;
}

}  // namespace strata::report
