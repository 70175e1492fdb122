// planner/trace_bounds.h: the timeline size estimated from a strategy alone must bound
// what the simulator records and what chrome_trace_json writes, and stay close to it (a
// loose estimate would refuse traces that fit). Random strategies of small models: every
// schedule, vpp, dp, micro-batch and global batch the models accept.
#include "planner/trace_bounds.h"

#include <gtest/gtest.h>

#include <random>

#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "planner/simulator.h"

namespace strata::planner {
namespace {

TEST(TraceBounds, EstimateBoundsTheRecordedEventsAndTheWrittenBytes) {
  const costmodel::ClusterSpec cluster = costmodel::load_cluster("dgx-a100");
  // A stack that runs every ZeRO stage (the A100's validated megatron-2021 runs none).
  const costmodel::SoftwareStack stack = costmodel::load_software_stack("mcore-2024");
  const models::ModelSpec models_[] = {models::load_model("tiny"), models::load_model("gpt2-124m")};
  std::mt19937 rng(2718);
  auto pick = [&](std::initializer_list<int> v) {
    return *(v.begin() + std::uniform_int_distribution<int>(0, static_cast<int>(v.size()) - 1)(rng));
  };
  int checked = 0;
  for (int trial = 0; trial < 400 && checked < 60; ++trial) {
    const models::ModelSpec& m = models_[trial % 2];
    Strategy s;
    s.tp = pick({1, 2});
    s.pp = pick({1, 2, 3, 4});
    s.dp = pick({1, 2, 4});
    s.vpp = pick({1, 1, 2, 3});
    s.micro_batch = pick({1, 2, 4});
    s.global_batch = s.micro_batch * s.dp * pick({1, 3, 8, 17, 64});
    s.zero = pick({0, 1, 2, 3});
    s.schedule = s.vpp > 1 ? ScheduleKind::Interleaved
                           : (pick({0, 1}) ? ScheduleKind::OneFOneB : ScheduleKind::GPipe);
    if (!validate(s, m).empty()) continue;
    SimulateOptions so;
    so.timeline = true;
    so.stack = &stack;
    const SimulationResult r = simulate(m, cluster, s, so);
    const double events = static_cast<double>(r.timeline.size());
    const double estimate = trace_event_estimate(s);
    SCOPED_TRACE(::testing::Message() << m.name << " tp " << s.tp << " pp " << s.pp << " dp " << s.dp
                                    << " vpp " << s.vpp << " mbs " << s.micro_batch << " gb "
                                    << s.global_batch << " zero " << s.zero);
    EXPECT_GE(estimate, events);
    EXPECT_LE(estimate, events + kTraceEventsPerStage * s.pp) << "the estimate is loose";
    const double bytes = static_cast<double>(chrome_trace_json(r, "t").size());
    EXPECT_GE(trace_bytes_estimate(s), bytes);
    ++checked;
  }
  EXPECT_GE(checked, 40);
}

// The exchanges inside the compute steps have lanes of their own: at most one event per
// step on each, and only when the strategy has ep / etp > 1 or cp > 1, which the estimate
// counts. A lane may stay empty where nothing is exposed (a stage of dense blocks, a K/V
// exchange hidden behind attention): the estimate is then looser by up to that lane.
TEST(TraceBounds, EstimateBoundsTheExpertAndContextParallelLanes) {
  const costmodel::ClusterSpec cluster = costmodel::load_cluster("dgx-h100");
  const costmodel::SoftwareStack stack = costmodel::load_software_stack("mcore-2024");
  const models::ModelSpec moe = models::load_model("tiny-moe"), dense = models::load_model("gpt2-124m");
  std::mt19937 rng(3141);
  auto pick = [&](std::initializer_list<int> v) {
    return *(v.begin() + std::uniform_int_distribution<int>(0, static_cast<int>(v.size()) - 1)(rng));
  };
  int checked = 0, with_ep_events = 0, with_cp_events = 0;
  for (int trial = 0; trial < 400 && checked < 40; ++trial) {
    const bool experts = trial % 2 == 0;
    const models::ModelSpec& m = experts ? moe : dense;
    Strategy s;
    s.tp = pick({1, 2});
    s.pp = pick({1, 2});
    s.dp = pick({1, 2, 4});
    s.cp = experts ? 1 : pick({1, 2, 4});
    s.ep = experts ? pick({1, 2, 4}) : 1;
    s.etp = experts ? pick({1, s.tp}) : 1;
    s.sequence_parallel = s.tp > 1;
    s.vpp = s.pp > 1 ? pick({1, 2}) : 1;
    s.micro_batch = pick({1, 2});
    // Up to 64 micro-batches a pipeline: enough lane events to pass the per-stage slack.
    s.global_batch = s.micro_batch * s.dp * s.pp * pick({1, 8, 64});
    s.schedule = s.vpp > 1 ? ScheduleKind::Interleaved : ScheduleKind::OneFOneB;
    if (!validate(s, m).empty()) continue;
    SimulateOptions so;
    so.timeline = true;
    so.stack = &stack;
    const SimulationResult r = simulate(m, cluster, s, so);
    int ep_events = 0, cp_events = 0;
    for (const auto& e : r.timeline) {
      ep_events += e.stream == "ep_comm";
      cp_events += e.stream == "cp_comm";
    }
    SCOPED_TRACE(::testing::Message() << m.name << " tp " << s.tp << " pp " << s.pp << " dp " << s.dp << " cp "
                                    << s.cp << " ep " << s.ep << " etp " << s.etp << " vpp " << s.vpp << " gb "
                                    << s.global_batch);
    const double steps = 2.0 * s.pp * s.vpp * static_cast<double>(s.num_microbatches());
    EXPECT_LE(ep_events, s.ep > 1 || s.etp > 1 ? steps : 0);
    EXPECT_LE(cp_events, s.cp > 1 ? steps : 0);
    const double events = static_cast<double>(r.timeline.size());
    const double estimate = trace_event_estimate(s);
    EXPECT_GE(estimate, events);
    const double empty_lanes = (s.ep > 1 || s.etp > 1 ? steps - ep_events : 0) + (s.cp > 1 ? steps - cp_events : 0);
    EXPECT_LE(estimate, events + empty_lanes + kTraceEventsPerStage * s.pp) << "the estimate is loose";
    EXPECT_GE(trace_bytes_estimate(s), static_cast<double>(chrome_trace_json(r, "t").size()));
    with_ep_events += ep_events > 0;
    with_cp_events += cp_events > 0;
    ++checked;
  }
  EXPECT_GE(checked, 25);
  EXPECT_GE(with_ep_events, 5) << "strategies whose all-to-all lane has events";
  EXPECT_GE(with_cp_events, 5) << "strategies whose K/V-exchange lane has events";
}

TEST(TraceBounds, HugeGlobalBatchesDoNotOverflow) {
  Strategy s;
  s.pp = 1 << 20;
  s.vpp = 1;
  s.dp = 1;
  s.micro_batch = 1;
  s.global_batch = std::int64_t{1} << 40;
  EXPECT_GT(trace_bytes_estimate(s), kMaxTraceBytes);
  EXPECT_GT(trace_event_estimate(s), 1e18);
}

}  // namespace
}  // namespace strata::planner
