#include "validation/validate_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/report_data.h"
#include "report/report_json.h"
#include "validation/validate_stats.h"

namespace strata::validation {
namespace {
using nlohmann::json;
using namespace strata::report;  // strategy labels, seconds and the strategy JSON of compare's reports
}  // namespace

ValidateSummary summarize(const std::vector<PlanRun>& runs) {
  ValidateSummary s;
  std::vector<double> pred, meas;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    if (s.predicted_fastest < 0 || r.predicted_s < runs[static_cast<std::size_t>(s.predicted_fastest)].predicted_s)
      s.predicted_fastest = static_cast<int>(i);
    if (r.status != "ok") {
      ++s.plans_failed;
      continue;
    }
    ++s.plans_ok;
    pred.push_back(r.predicted_s);
    meas.push_back(r.measured_s);
    if (s.measured_fastest < 0 || r.measured_s < runs[static_cast<std::size_t>(s.measured_fastest)].measured_s)
      s.measured_fastest = static_cast<int>(i);
  }
  s.mape_pct = pred.empty() ? NAN : mape_pct(pred, meas);
  s.spearman = spearman(pred, meas);
  s.predicted_fastest_gap_pct = NAN;
  if (s.predicted_fastest >= 0 && s.measured_fastest >= 0) {
    const auto& pf = runs[static_cast<std::size_t>(s.predicted_fastest)];
    const auto& mf = runs[static_cast<std::size_t>(s.measured_fastest)];
    if (pf.status == "ok") {
      s.predicted_fastest_is_fastest = s.predicted_fastest == s.measured_fastest;
      s.predicted_fastest_gap_pct = (pf.measured_s / mf.measured_s - 1.0) * 100.0;
      s.predicted_fastest_within_5pct = s.predicted_fastest_gap_pct <= 5.0 + 1e-9;
    }
  }
  return s;
}

std::string validate_table(const ValidateReport& r) {
  std::string out = fmt::format("strata validate: {} on {}, {} ranks, {} steps{} (median after {} warm-up)\n\n",
                                r.model, r.cluster, r.ranks, r.steps,
                                r.repeat > 1 ? fmt::format(" x {} runs", r.repeat) : "", r.warmup);
  if (!r.host.empty()) out += fmt::format("host: {}\n", r.host);
  if (!r.blas.empty()) out += fmt::format("BLAS: {}\n", r.blas);
  if (!r.host.empty() || !r.blas.empty()) out += "\n";
  if (r.recalibrated)
    out += "predictions: from a quick calibration of this machine before each round (median over rounds)\n\n";
  std::size_t name_w = 4, label_w = 8;
  for (const auto& p : r.runs) {
    name_w = std::max(name_w, p.name.size());
    label_w = std::max(label_w, strategy_label(p.strategy).size());
  }
  out += fmt::format("{:<3} {:<{}}  {:<{}}  {:>11}  {:>11}  {:>7}  {}\n", "#", "plan", name_w, "strategy",
                     label_w, "predicted", "measured", "error", "status");
  for (std::size_t i = 0; i < r.runs.size(); ++i) {
    const auto& p = r.runs[i];
    std::string mark;
    if (static_cast<int>(i) == r.summary.predicted_fastest) mark += "P";
    if (static_cast<int>(i) == r.summary.measured_fastest) mark += "M";
    const bool ok = p.status == "ok";
    std::string status = ok ? "ok" : fmt::format("{} (exit {}): {}", p.status, p.exit_code, p.error);
    out += fmt::format("{:<3} {:<{}}  {:<{}}  {:>11}  {:>11}  {:>7}  {} {}\n", i + 1, p.name, name_w,
                       strategy_label(p.strategy), label_w, format_seconds(p.predicted_s),
                       ok ? format_seconds(p.measured_s) : "–",
                       ok ? fmt::format("{:.1f}%", abs_error_pct(p.predicted_s, p.measured_s)) : "–", status,
                       mark.empty() ? "" : "[" + mark + "]");
  }
  const auto& s = r.summary;
  out += fmt::format("\nplans: {} ok, {} failed\n", s.plans_ok, s.plans_failed);
  out += std::isfinite(s.mape_pct) ? fmt::format("MAPE: {:.1f}%\n", s.mape_pct) : "MAPE: n/a (no plan ran)\n";
  out += s.spearman ? fmt::format("Spearman rank correlation (predicted vs measured): {:.3f}\n", *s.spearman)
                    : "Spearman rank correlation: n/a (fewer than 2 plans ran, or a constant side)\n";
  if (s.predicted_fastest >= 0) {
    const auto& pf = r.runs[static_cast<std::size_t>(s.predicted_fastest)];
    if (pf.status != "ok")
      out += fmt::format("predicted fastest (#{}) failed to run\n", s.predicted_fastest + 1);
    else if (s.predicted_fastest_is_fastest)
      out += fmt::format("predicted fastest (#{}) is measured fastest\n", s.predicted_fastest + 1);
    else
      out += fmt::format("predicted fastest (#{}) is measured {:.1f}% slower than the fastest (#{}): {}\n",
                         s.predicted_fastest + 1, s.predicted_fastest_gap_pct, s.measured_fastest + 1,
                         s.predicted_fastest_within_5pct ? "within 5%" : "NOT within 5%");
  }
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& p : r.runs)
    if (p.host_load_1m >= 0) lo = std::min(lo, p.host_load_1m), hi = std::max(hi, p.host_load_1m);
  if (hi >= 0)
    out += fmt::format("host load (1-minute average after each plan): {:.1f} .. {:.1f}{}\n", lo, hi,
                       r.host_cores > 0 ? fmt::format(" on {} cores", r.host_cores) : "");
  out += "[P] predicted fastest, [M] measured fastest\n";
  return out;
}

std::string validate_json(const ValidateReport& r) {
  json plans = json::array();
  for (const auto& p : r.runs) {
    const bool ok = p.status == "ok";
    plans.push_back(json{{"name", p.name},
                         {"model", p.model},
                         {"strategy", strategy_to_json(p.strategy)},
                         {"predicted_step_s", number_or_null(p.predicted_s)},
                         {"round_predicted_s", p.round_predicted_s},
                         {"measured_step_s", ok ? number_or_null(p.measured_s) : json(nullptr)},
                         {"abs_error_pct", ok ? number_or_null(abs_error_pct(p.predicted_s, p.measured_s)) : json(nullptr)},
                         {"runtime_predicted_step_s", p.runtime_predicted_s > 0 ? json(p.runtime_predicted_s) : json(nullptr)},
                         {"predicted_compute_s", number_or_null(p.predicted_compute_s)},
                         {"measured_gemm_s", ok && p.measured_gemm_s > 0 ? json(p.measured_gemm_s) : json(nullptr)},
                         {"host_load_1m", p.host_load_1m >= 0 ? json(p.host_load_1m) : json(nullptr)},
                         {"status", p.status},
                         {"exit_code", p.exit_code},
                         {"error", p.error},
                         {"step_times_s", p.step_times_s}});
  }
  const auto& s = r.summary;
  json summary{{"plans_ok", s.plans_ok},
               {"plans_failed", s.plans_failed},
               {"mape_pct", number_or_null(s.mape_pct)},
               {"spearman", s.spearman ? json(*s.spearman) : json(nullptr)},
               {"predicted_fastest", s.predicted_fastest >= 0 ? json(s.predicted_fastest + 1) : json(nullptr)},
               {"measured_fastest", s.measured_fastest >= 0 ? json(s.measured_fastest + 1) : json(nullptr)},
               {"predicted_fastest_is_fastest", s.predicted_fastest_is_fastest},
               {"predicted_fastest_gap_pct", number_or_null(s.predicted_fastest_gap_pct)},
               {"predicted_fastest_within_5pct", s.predicted_fastest_within_5pct}};
  json out{{"schema_version", 1}, {"command", "validate"}, {"model", r.model},     {"cluster", r.cluster},
           {"ranks", r.ranks},    {"steps", r.steps},        {"warmup_steps", r.warmup}, {"repeat", r.repeat}, {"recalibrated", r.recalibrated}, {"host_cores", r.host_cores},
           {"host", r.host},      {"blas", r.blas},           {"plans", plans},
           {"summary", summary}};
  return out.dump(2) + "\n";
}

}  // namespace strata::validation
