// A PlanReport built by hand (no search): two gpt2-124m plans on 8 GPUs with chosen
// predictions, so the formatters' output can be checked against known numbers.
#pragma once
#include "report/plan_report.h"
#include "models/model_spec.h"
#include "planner/plan.h"

namespace strata::report::testing {

inline planner::Plan make_plan(int tp, int pp, int dp, double iteration_s, double bubble_s) {
  planner::Plan p;
  p.model = models::load_model("gpt2-124m");
  p.cluster = "dgx-a100";
  p.strategy = {.dp = dp, .tp = tp, .pp = pp, .micro_batch = 2, .global_batch = 64, .zero = 1,
                .recompute = planner::Recompute::Selective, .sequence_parallel = tp > 1, .precision = {}};
  p.stage_layers = planner::even_stage_layers(p.model, pp, 1);
  auto& q = p.prediction;
  q.iteration_s = iteration_s;
  q.tokens_per_s = 64.0 * 1024 / iteration_s;
  q.model_tflops_per_gpu = 123.4;
  q.hardware_tflops_per_gpu = 150.0;
  q.mfu = 0.395;
  q.peak_memory_gib = 41.25;
  q.stage_memory_gib.assign(pp, 41.25);
  q.bubble_fraction = bubble_s / iteration_s;
  q.breakdown_s.compute = iteration_s - bubble_s - 0.1;
  q.breakdown_s.tp_comm = 0.05;
  q.breakdown_s.dp_comm = 0.05;
  q.breakdown_s.bubble = bubble_s;
  q.fits_memory = true;
  return p;
}

inline PlanReport make_report() {
  PlanReport r;
  r.command = "plan";
  r.model = "gpt2-124m";
  r.cluster = "dgx-a100";
  r.device = "a100-sxm-80gb";
  r.gpus = 8;
  r.global_batch = 64;
  r.memory_capacity_gib = 80;
  r.reserve_gib = 4;
  r.defaults = {"cluster dgx-a100"};
  r.notes = {"profile `a100-sxm-80gb` is datasheet-only"};
  r.plans = {make_plan(2, 2, 2, 1.0, 0.2), make_plan(1, 4, 2, 1.25, 0.45)};
  r.searched = true;
  r.candidates_evaluated = 120;
  r.infeasible_memory = 7;
  r.invalid = 30;
  r.search_s = 0.012;
  return r;
}

}  // namespace strata::report::testing
