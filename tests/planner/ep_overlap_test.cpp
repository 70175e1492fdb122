// Megatron-Core's batch-level EP overlap (strategy.ep_overlap, planner/ep_overlap.h): which
// steps run merged, what a merged step can hide, the simulator's charge, the rules, plan
// files.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

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

TEST(EpOverlap, MergedLayersRunAsMegatronsLayerScheduleIssuesThem) {
  // One layer, by hand (seconds): compute pre_fwd 1 | experts_bwd 2 | experts_fwd 1 | pre_bwd 2,
  // communication combine_bwd 2 | dispatch_fwd 0.5 | dispatch_bwd 2 | combine_fwd 2.
  MergedLayer l;
  l.pre_fwd = 1, l.dispatch_fwd = 0.5, l.experts_fwd = 1, l.combine_fwd = 2;
  l.combine_bwd = 2, l.experts_bwd = 2, l.experts_wgrad = 1, l.dispatch_bwd = 2, l.pre_bwd = 2, l.pre_wgrad = 1;
  // combine_bwd [0,2]; pre_fwd [0,1]; experts_bwd waits for combine_bwd [2,4]; dispatch_fwd
  // [2,2.5]; dispatch_bwd waits for experts_bwd [4,6]; experts_fwd [4,5]; combine_fwd [6,8];
  // pre_bwd waits for dispatch_bwd [6,8].
  EXPECT_DOUBLE_EQ(merged_layers_s({l}, false), 8.0);
  // Delayed weight gradients: experts' input gradient [2,3], dispatch_bwd [3,5] beside their
  // weight gradient [3,4] and experts_fwd [4,5]; combine_fwd [5,7]; pre_bwd's input gradient
  // [5,6], its weight gradient [6,7].
  EXPECT_DOUBLE_EQ(merged_layers_s({l}, true), 7.0);
  // A second layer waits for the first's outputs: its combine_bwd for pre_bwd's input
  // gradient (6, beside the delayed weight gradient), its pre_fwd for combine_fwd (7).
  // comm: combine_bwd [7,9] (after combine_fwd on the stream); comp: pre_fwd [7,8], experts
  // dgrad [9,10], wgrad [10,11]; dispatch_fwd [9,9.5]; dispatch_bwd [10,12]; experts_fwd
  // [11,12]; combine_fwd [12,14]; pre_bwd [12,13] + [13,14].
  EXPECT_DOUBLE_EQ(merged_layers_s({l, l}, true), 14.0);
  // Nothing to exchange: the compute alone.
  MergedLayer dense;
  dense.pre_fwd = 1, dense.experts_fwd = 2, dense.experts_bwd = 4, dense.pre_bwd = 2;
  EXPECT_DOUBLE_EQ(merged_layers_s({dense, dense}, false), 18.0);
  // The dispatcher's SMs slow the compute beside it: a fifth of the SMs, a quarter more time;
  // an exchange holding every SM gains nothing.
  EXPECT_DOUBLE_EQ(exchange_slowdown_s(2.5, 0.2), 2.5 * 0.25);
  EXPECT_DOUBLE_EQ(exchange_slowdown_s(2.5, 1.0), 2.5);
}

TEST(EpOverlap, MergedLayersTakeAtLeastTheComputeAtMostEverythingAndDelayNeverSlows) {
  std::uint64_t x = 88172645463325252ull;
  const auto uniform = [&] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return static_cast<double>(x % 1000) / 100.0;
  };
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<MergedLayer> ls(1 + trial % 5);
    double compute = 0, exchange = 0;
    for (MergedLayer& l : ls) {
      l.pre_fwd = uniform(), l.dispatch_fwd = uniform(), l.experts_fwd = uniform(), l.combine_fwd = uniform();
      l.combine_bwd = uniform(), l.experts_bwd = uniform(), l.dispatch_bwd = uniform(), l.pre_bwd = uniform();
      l.experts_wgrad = 0.5 * l.experts_bwd, l.pre_wgrad = 0.5 * l.pre_bwd;
      compute += l.compute();
      exchange += l.exchange();
    }
    const double plain = merged_layers_s(ls, false), delayed = merged_layers_s(ls, true);
    EXPECT_GE(plain, compute - 1e-9) << trial;
    EXPECT_LE(plain, compute + exchange + 1e-9) << trial;
    EXPECT_LE(delayed, plain + 1e-9) << trial;
    EXPECT_GE(delayed, compute - 1e-9) << trial;
  }
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

TEST(EpOverlap, DelayedWeightGradientsHideMoreOfTheExchangeAndNeverSlowTheStep) {
  for (const auto& [pp, vpp] : {std::pair{1, 1}, std::pair{2, 2}}) {
    Strategy s = moe_layout(pp, vpp);
    s.ep_overlap = true;
    const SimulationResult merged = run(s);
    s.delay_wgrad = true;
    const SimulationResult delayed = run(s);
    EXPECT_LE(delayed.prediction.iteration_s, merged.prediction.iteration_s) << "pp " << pp;
    EXPECT_LE(delayed.prediction.breakdown_s.ep_comm, merged.prediction.breakdown_s.ep_comm) << "pp " << pp;
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
  // --delay-wgrad-compute only with the overlap (TransformerConfig.__post_init__).
  s = moe_layout(1, 1);
  s.delay_wgrad = true;
  EXPECT_NE(messages(validate(s, m)).find("strategy.delay_wgrad needs strategy.ep_overlap"), std::string::npos)
      << messages(validate(s, m));
  s.ep_overlap = true;
  EXPECT_TRUE(validate(s, m).empty()) << messages(validate(s, m));
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
  EXPECT_EQ(plan_to_yaml(p).find("delay_wgrad"), std::string::npos);
  p.strategy.delay_wgrad = true;
  EXPECT_TRUE(parse_plan_yaml(plan_to_yaml(p), "plan.yaml").strategy.delay_wgrad);
  EXPECT_EQ(nlohmann::json::parse(plan_to_json(p))["strategy"]["delay_wgrad"], true);
  p.strategy.ep_overlap = false;
  p.strategy.delay_wgrad = false;
  EXPECT_EQ(plan_to_yaml(p).find("ep_overlap"), std::string::npos);
}

}  // namespace strata::planner
