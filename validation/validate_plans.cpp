// `strata validate`: the plans it runs (validation/validate_plans.h).
#include "validation/validate_plans.h"

#include <fmt/format.h>

#include "common/errors.h"
#include "planner/search.h"
#include "planner/simulator.h"

namespace strata::validation {

namespace {

// Adds `p` unless its strategy is already listed; then the listed one also gets p's name
// ("top 1 = baseline dp").
void add_unique(std::vector<PlanToRun>& out, PlanToRun p) {
  for (auto& q : out)
    if (q.plan.strategy == p.plan.strategy) {
      q.name += " = " + p.name;
      return;
    }
  out.push_back(std::move(p));
}

}  // namespace

std::vector<PlanToRun> choose_plans(const ValidateOptions& f, const models::ModelSpec& model,
                                    const costmodel::ClusterSpec& cluster,
                                    const costmodel::SoftwareStack& stack, const Warn& warn) {
  std::vector<PlanToRun> out;
  auto search = [&](int top_k, auto restrict) {
    planner::SearchOptions opt;
    opt.stack = &stack;
    opt.gpus = f.np;
    opt.global_batch = f.global_batch;
    opt.top_k = top_k;
    restrict(opt);
    return planner::search(model, cluster, opt);
  };
  for (const auto& spec : f.plans) {
    if (spec == "top" || spec == "all") {
      const auto r = search(spec == "all" ? 100000 : f.top, [](planner::SearchOptions&) {});
      if (r.ranked.empty())
        throw NoFeasiblePlan(fmt::format("no strategy for {} fits on {} ranks of {} ({} over memory, {} invalid)",
                                         model.name, f.np, f.cluster, r.infeasible_memory, r.invalid));
      for (std::size_t i = 0; i < r.ranked.size(); ++i)
        add_unique(out, {fmt::format("{} {}", spec, i + 1), planner::to_plan(model, f.cluster, r.ranked[i])});
      if (spec == "all") continue;
      // The pure baselines that fit: all ranks on one axis, the planner's best of the rest.
      const std::pair<const char*, void (*)(planner::SearchOptions&, int)> axes[] = {
          {"dp", [](planner::SearchOptions& o, int n) { o.dp = n, o.tp = 1, o.pp = 1; }},
          {"tp", [](planner::SearchOptions& o, int n) { o.dp = 1, o.tp = n, o.pp = 1; }},
          {"pp", [](planner::SearchOptions& o, int n) { o.dp = 1, o.tp = 1, o.pp = n; }}};
      for (const auto& [axis, set] : axes) {
        planner::SearchResult b;
        try {
          b = search(1, [&, set = set](planner::SearchOptions& o) { set(o, f.np); });
        } catch (const InputError& e) {
          warn(fmt::format("baseline {}={} skipped: {}", axis, f.np, e.what()));
          continue;
        }
        if (b.ranked.empty()) {
          warn(fmt::format("baseline {}={} skipped: no such strategy fits {} on {}", axis, f.np, model.name,
                           f.cluster));
          continue;
        }
        add_unique(out, {fmt::format("baseline {}", axis), planner::to_plan(model, f.cluster, b.ranked.front())});
      }
    } else {
      planner::Plan p = planner::load_plan(spec);
      if (p.strategy.gpus() != f.np)
        input_error("--plans {}: the plan uses dp x tp x pp = {} ranks but --np is {}", spec, p.strategy.gpus(),
                    f.np);
      if (p.model.name != model.name)
        warn(fmt::format("--plans {} is for model {}, not {}; it runs with its own model", spec, p.model.name,
                         model.name));
      // Predict on this cluster (the file's prediction may be for another one).
      planner::SimulateOptions so;
      so.stack = &stack;
      so.stage_layers = p.stage_layers;
      const auto sim = planner::simulate(p.model, cluster, p.strategy, so);
      p.prediction = sim.prediction;
      p.stage_layers = sim.stage_layers;
      p.cluster = f.cluster;
      out.push_back({spec, std::move(p)});
    }
  }
  return out;
}

}  // namespace strata::validation
