// Megatron-Core's batch-level EP overlap (strategy.ep_overlap, planner/ep_overlap.h): which
// steps run merged, what a merged step can hide, the simulator's charge, the rules, plan
// files.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "planner/ep_overlap.h"
#include "planner/plan.h"
#include "planner/schedule.h"
#include "planner/simulator.h"
#include "planner/strategy.h"
#include "tests/tables_only_cluster.h"

namespace strata::planner {
namespace {

models::ModelSpec wide_moe() {
  return models::parse_model_yaml(
      "name: wide-moe\nlayers: 8\nhidden: 1024\nheads: 16\nffn: 4096\nvocab: 4096\nseq_len: 1024\n"
      "activation: swiglu\nnorm: rmsnorm\ntied_embeddings: false\n"
      "moe: {experts: 32, top_k: 4, expert_ffn: 1024}\n",
      "wide-moe.yaml");
}

// 64 GPUs of dgx-h100: ep 16 spans two nodes, so the token exchange is a real share of the step.
Strategy moe_layout(int pp, int vpp) {
  Strategy s;
  s.tp = 1, s.pp = pp, s.dp = 64 / pp, s.ep = 16, s.etp = 1, s.vpp = vpp;
  s.micro_batch = 1;
  s.global_batch = 256;
  s.zero = 1;
  s.schedule = vpp > 1 ? ScheduleKind::Interleaved : ScheduleKind::OneFOneB;
  return s;
}

SimulationResult run(const Strategy& s, const char* stack_name = "mcore-2024-deepep") {
  static const costmodel::ClusterSpec cluster = strata::testing::tables_only_cluster("dgx-h100");
  const costmodel::SoftwareStack stack = costmodel::load_software_stack(stack_name);
  SimulateOptions o;
  o.stack = &stack;
  return simulate(wide_moe(), cluster, s, o);
}

std::string messages(const std::vector<Violation>& v) {
  std::string out;
  for (const auto& x : v) out += x.message + "\n";
  return out;
}

// Forward steps a rank runs before its first backward in strata's own schedule lists.
int forwards_before_first_backward(ScheduleKind kind, int pp, int stage, int m, int vpp) {
  int n = 0;
  for (const ScheduleStep& st : build_schedule(kind, pp, stage, m, vpp)) {
    if (st.kind == StepKind::Backward) break;
    if (st.kind == StepKind::Forward) ++n;
  }
  return n;
}

}  // namespace

TEST(EpOverlap, MergedStepsAreTheSteadyStateOfTheScheduleStrataRuns) {
  // pp 1: every step but the first forward (and the last backward).
  EXPECT_DOUBLE_EQ(merged_step_share(1, 1, 8, 0), 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(merged_step_share(1, 1, 1, 0), 0.0);
  // Interleaved: in the schedule lists the simulator and the runtime walk, the first backward
  // follows the first steady-state forward, so the forwards before it are Megatron's warm-up
  // plus one: the warm-up Megatron runs under the overlap, every step of it alone.
  for (int pp : {2, 4, 8})
    for (int vpp : {2, 3})
      for (int m : {pp, 4 * pp}) {
        const double steps = static_cast<double>(m) * vpp;
        for (int rank = 0; rank < pp; ++rank) {
          const int warm = forwards_before_first_backward(ScheduleKind::Interleaved, pp, rank, m, vpp);
          const double expected = std::clamp((steps - warm) / steps, 0.0, 1.0);
          EXPECT_DOUBLE_EQ(merged_step_share(pp, vpp, m, rank), expected)
              << "pp " << pp << " vpp " << vpp << " m " << m << " rank " << rank << " warm-up " << warm;
        }
      }
}

TEST(EpOverlap, AMergedStepHidesNoMoreThanTheExchangeOrTheComputeBesideIt) {
  const HiddenExchange h = hidden_exchange(/*fwd compute*/ 1.0, /*fwd exchange*/ 3.0, /*bwd compute*/ 2.0,
                                           /*bwd exchange*/ 0.5, /*SM share*/ 0.0);
  EXPECT_DOUBLE_EQ(h.fwd_s, 2.0);  // the forward's exchange, behind the backward's compute (2 of 3 s)
  EXPECT_DOUBLE_EQ(h.bwd_s, 0.5);  // the backward's, behind the forward's compute (all of it)
  EXPECT_DOUBLE_EQ(h.slowdown_s, 0.0);
  // The dispatcher's SMs slow the compute beside it: a fifth of the SMs, a quarter more time.
  EXPECT_DOUBLE_EQ(hidden_exchange(1.0, 3.0, 2.0, 0.5, 0.2).slowdown_s, 2.5 * 0.25);
  // An exchange holding every SM gains nothing.
  const HiddenExchange all = hidden_exchange(1.0, 3.0, 2.0, 0.5, 1.0);
  EXPECT_DOUBLE_EQ(all.slowdown_s, all.fwd_s + all.bwd_s);
}

TEST(EpOverlap, HidesPartOfTheExchangeAndNeverMoreThanItCost) {
  for (const auto& [pp, vpp] : {std::pair{1, 1}, std::pair{2, 2}}) {
    Strategy s = moe_layout(pp, vpp);
    const SimulationResult plain = run(s);
    s.ep_overlap = true;
    const SimulationResult merged = run(s);
    const Breakdown& a = plain.prediction.breakdown_s;
    const Breakdown& b = merged.prediction.breakdown_s;
    ASSERT_GT(a.ep_comm, 0.0);
    EXPECT_LT(merged.prediction.iteration_s, plain.prediction.iteration_s) << "pp " << pp;
    EXPECT_GT(merged.prediction.iteration_s, plain.prediction.iteration_s - a.ep_comm) << "pp " << pp;
    EXPECT_LT(b.ep_comm, a.ep_comm);
    EXPECT_GE(b.ep_comm, 0.0);
    // DeepEP's SMs slow the compute beside the hidden exchange.
    EXPECT_GT(b.compute, a.compute);
    // One more micro-batch warms up: never less memory.
    EXPECT_GE(merged.prediction.peak_memory_gib, plain.prediction.peak_memory_gib);
    EXPECT_NEAR(b.compute + b.tp_comm + b.ep_comm + b.pp_comm + b.dp_comm + b.optimizer + b.bubble + b.straggler,
                merged.prediction.iteration_s, 1e-9 * merged.prediction.iteration_s);
  }
}

TEST(EpOverlap, RulesAreMegatronsAndNamed) {
  const models::ModelSpec m = wide_moe();
  EXPECT_TRUE(validate(moe_layout(2, 2), m).empty());
  Strategy s = moe_layout(2, 1);
  s.ep_overlap = true;
  EXPECT_NE(messages(validate(s, m)).find("needs the interleaved schedule"), std::string::npos) << messages(validate(s, m));
  s = moe_layout(1, 1);
  s.ep_overlap = true;
  s.recompute = Recompute::Full;
  EXPECT_NE(messages(validate(s, m)).find("recompute full"), std::string::npos);
  s.recompute = Recompute::Selective;
  s.recompute_modules.moe = true;
  EXPECT_NE(messages(validate(s, m)).find("recompute module moe"), std::string::npos);
  s = moe_layout(1, 1);
  s.ep = 1;
  s.ep_overlap = true;
  EXPECT_NE(messages(validate(s, m)).find("strategy.ep > 1"), std::string::npos);
  // A stack that does not run it says so by name.
  s = moe_layout(1, 1);
  s.ep_overlap = true;
  try {
    run(s, "mcore-2024");
    ADD_FAILURE() << "mcore-2024 ran the EP overlap";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("strategy.ep_overlap"), std::string::npos) << e.what();
  }
}

TEST(EpOverlap, RoundTripsThroughPlanFiles) {
  Plan p;
  p.model = wide_moe();
  p.cluster = "dgx-h100";
  p.strategy = moe_layout(2, 2);
  p.strategy.ep_overlap = true;
  p.stage_layers = even_stage_layers(p.model, 2, 2);
  EXPECT_TRUE(parse_plan_yaml(plan_to_yaml(p), "plan.yaml").strategy.ep_overlap);
  EXPECT_EQ(nlohmann::json::parse(plan_to_json(p))["strategy"]["ep_overlap"], true);
  p.strategy.ep_overlap = false;
  EXPECT_EQ(plan_to_yaml(p).find("ep_overlap"), std::string::npos);
}

}  // namespace strata::planner
