#include "planner/plan_recompute.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "common/errors.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "planner/simulator.h"

namespace strata::planner {

std::string recompute_plan_prediction(Plan& plan, const std::string& source, const std::string& stand_in) {
  std::optional<costmodel::ClusterSpec> cluster;
  std::optional<costmodel::SoftwareStack> stack;
  std::string gone;  // why the plan's own cluster or stack could not be loaded
  const auto load = [&](const std::string& name, const std::string& stack_name) {
    cluster = costmodel::load_cluster(name);
    stack = costmodel::load_software_stack(!stack_name.empty() ? stack_name
                                                               : costmodel::default_software_stack_name(cluster->device));
  };
  try {
    load(plan.cluster, plan.prediction.stack);
  } catch (const InputError& e) {
    // A stored prediction cannot be trusted unchecked (the model may have been edited
    // since): the stand-in (the host the job runs on) recomputes it from the model.
    if (stand_in.empty() && plan.prediction.peak_memory_gib > 0) return "";
    if (stand_in.empty())
      input_error("{}: the plan has no memory prediction and its cluster {} cannot be loaded to "
                  "compute one; re-plan it with `strata simulate --out`",
                  source, plan.cluster);
    gone = e.what();
    load(stand_in, "");
  }
  // More ranks than the cluster lists (CPU parity runs oversubscribe a host): the memory of
  // a rank does not depend on how many nodes there are, so add nodes for the recompute.
  const int gpus_per_node = std::max(1, cluster->gpus_per_node);
  cluster->nodes = std::max(cluster->nodes, (plan.strategy.gpus() + gpus_per_node - 1) / gpus_per_node);
  SimulateOptions so;
  so.stack = &*stack;
  so.stage_layers = plan.stage_layers;
  Prediction now;
  try {
    now = simulate(plan.model, *cluster, plan.strategy, so).prediction;
  } catch (const InputError& e) {
    if (!(plan.prediction.peak_memory_gib > 0)) return "";
    return fmt::format("its stored prediction could not be recomputed ({}); the memory pre-flight uses the stored one",
                       e.what());
  }
  const Prediction stored = plan.prediction;
  plan.prediction = now;
  if (!gone.empty())
    return fmt::format("its cluster {} cannot be loaded ({}): its prediction is recomputed on {} (peak {:.2f} GiB "
                       "per rank), which this job uses",
                       plan.cluster, gone, stand_in, now.peak_memory_gib);
  if (!(stored.peak_memory_gib > 0)) return "";  // no stored prediction to compare with
  const auto differs = [](double a, double b) { return !(std::abs(a - b) <= 0.02 * std::max(std::abs(a), std::abs(b)) + 1e-3); };
  if (!differs(stored.peak_memory_gib, now.peak_memory_gib) && !differs(stored.iteration_s, now.iteration_s))
    return "";
  return fmt::format("the plan's stored prediction (peak {:.2f} GiB per rank, step {:.4g} s) does not "
                     "match its model and strategy: recomputed {:.2f} GiB, {:.4g} s, which this job uses "
                     "(was the model edited after planning?)",
                     stored.peak_memory_gib, stored.iteration_s, now.peak_memory_gib, now.iteration_s);
}

}  // namespace strata::planner
