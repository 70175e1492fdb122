#include "report/imported_job_note.h"

#include <fmt/format.h>

#include "common/errors.h"
#include "planner/simulator.h"
#include "report/report_data.h"

namespace strata::report {

std::string add_imported_job(PlanReport& report, const std::string& source, const std::string& cluster_name,
                             const planner::Strategy& strategy, const std::vector<std::vector<int>>& stage_layers,
                             const models::ModelSpec& model, const costmodel::ClusterSpec& cluster,
                             const costmodel::SoftwareStack& stack) {
  planner::SimulateOptions so;
  so.stack = &stack;
  so.stage_layers = stage_layers;
  planner::SimulationResult sim;
  try {
    sim = planner::simulate(model, cluster, strategy, so);
  } catch (const InputError& e) {
    return fmt::format("your job from {}, {}: not predicted: {}", source, strategy_label(strategy), e.what());
  }
  planner::Plan plan;
  plan.model = model;
  plan.cluster = cluster_name;
  plan.strategy = strategy;
  plan.stage_layers = sim.stage_layers;
  plan.prediction = sim.prediction;
  report.imported_job = plan;
  report.imported_job_source = source;
  const planner::Prediction& p = sim.prediction;
  const std::string head = fmt::format("your job from {}, {}: {:.4g} s per step, MFU {:.1f}%", source,
                                       strategy_label(strategy), p.iteration_s, 100 * p.mfu);
  if (!p.fits_memory)
    return fmt::format("{}, but it does not fit memory (peak {:.1f} GiB per GPU)", head, p.peak_memory_gib);
  const double ratio = p.iteration_s / report.plans.front().prediction.iteration_s;
  return fmt::format("{}; the first plan is {}", head,
                     ratio >= 1.0005 ? fmt::format("{:.3f}x faster", ratio)
                     : ratio <= 0.9995
                         ? fmt::format("{:.3f}x slower (your layout beats every searched one)", 1 / ratio)
                         : std::string("as fast"));
}

}  // namespace strata::report
