#include "report/format_csv.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "costmodel/recompute_modules.h"

namespace strata::report {

namespace {

// The shortest text that reads back as `v`; empty for nan / inf (no value).
std::string number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string(); }

// A text cell, quoted when it holds a separator, a quote or a line break (RFC 4180).
std::string text(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string format_plan_csv(const PlanReport& r) {
  std::string out =
      "rank,tp,pp,dp,cp,ep,etp,vpp,micro_batch,global_batch,zero,recompute,recompute_modules,sequence_parallel,schedule,"
      "precision,step_s,likely_low_s,likely_high_s,tokens_per_s,model_tflops_per_gpu,mfu,peak_memory_gib,"
      "memory_capacity_gib,bubble_fraction,fits_memory\n";
  for (std::size_t i = 0; i < r.plans.size(); ++i) {
    const planner::Strategy& s = r.plans[i].strategy;
    const planner::Prediction& q = r.plans[i].prediction;
    const bool band = q.uncertainty >= 0;
    // The modules a selective recompute re-runs, space-separated (empty: none named), so that
    // two plans of one layout recomputing different modules read apart.
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", i + 1, s.tp,
                       s.pp, s.dp, s.cp, s.ep, s.etp, s.vpp, s.micro_batch, s.global_batch, s.zero,
                       planner::to_string(s.recompute),
                       fmt::format("{}", fmt::join(costmodel::recompute_module_names(s.recompute_modules), " ")),
                       s.sequence_parallel ? "true" : "false",
                       planner::to_string(s.schedule), text(q.precision), number(q.iteration_s),
                       band ? number(q.iteration_s * q.uncertainty_low) : "",
                       band ? number(q.iteration_s * q.uncertainty_high) : "", number(q.tokens_per_s),
                       number(q.model_tflops_per_gpu), number(q.mfu), number(q.peak_memory_gib),
                       number(r.memory_capacity_gib), number(q.bubble_fraction),
                       q.fits_memory ? "true" : "false");
  }
  return out;
}

}  // namespace strata::report
