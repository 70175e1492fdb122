// The scaling view and the step-time vs memory front, on plans built by hand
// (tests/report/format_fixture.h) with chosen step times and memory.
#include <gtest/gtest.h>

#include <sstream>

#include "common/errors.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "report/no_plan_reason.h"
#include "report/scaling_view.h"
#include "tests/report/format_fixture.h"

namespace strata::report {
namespace {

using testing::make_plan;

planner::Plan with_memory(planner::Plan p, double gib) {
  p.prediction.peak_memory_gib = gib;
  return p;
}

TEST(ParetoFront, KeepsOnlyPlansNoOtherBeatsOnTimeAndMemory) {
  // (step s, GiB): A (1.0, 70), B (1.2, 50), C (1.3, 60) is beaten by B on both,
  // D (2.0, 40), E (1.0, 75) is beaten by A (same time, more memory).
  const std::vector<planner::Plan> plans = {
      with_memory(make_plan(2, 2, 2, 1.0, 0.1), 70), with_memory(make_plan(1, 4, 2, 1.2, 0.1), 50),
      with_memory(make_plan(4, 2, 1, 1.3, 0.1), 60), with_memory(make_plan(1, 8, 1, 2.0, 0.1), 40),
      with_memory(make_plan(8, 1, 1, 1.0, 0.1), 75)};
  EXPECT_EQ(pareto_front(plans), (std::vector<std::size_t>{3, 1, 0}));  // least memory first
  const std::string t = format_pareto_table(plans, 80);
  EXPECT_NE(t.find("the 3 of 5 plans"), std::string::npos) << t;
  // D is 2.0 / 1.0 - 1 = +100% slower than the fastest, with 80 - 40 = 40 GiB headroom.
  EXPECT_NE(t.find("+100.0%"), std::string::npos) << t;
  EXPECT_NE(t.find("40.0"), std::string::npos) << t;
  EXPECT_TRUE(pareto_front({}).empty());
  // The page: one point per plan, the 3 front plans joined by a line, least memory first.
  const std::string html = pareto_html(plans, 80, "m on 8 GPUs of c");
  EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u);
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (auto at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<circle"), plans.size());
  EXPECT_EQ(count("r=\"5\""), 3u) << "the front's points";
  EXPECT_EQ(count("<polyline"), 1u);
  EXPECT_NE(html.find("device memory 80 GiB"), std::string::npos);
  EXPECT_NE(html.find(t), std::string::npos) << "the table under the chart";
  // The line visits D (40 GiB), B (50), A (70) in that order: x increases along it.
  const auto at = html.find("points=\"") + 8;
  std::istringstream pts(html.substr(at, html.find('"', at) - at));
  double last_x = -1;
  for (std::string xy; pts >> xy;) {
    const double x = std::stod(xy.substr(0, xy.find(',')));
    EXPECT_GT(x, last_x);
    last_x = x;
  }
}

// Nothing fits: the error line names what the stack searched with cannot run that would save
// memory (the A100 default, Megatron-LM 2021, has no expert parallelism for Mixtral), and
// says nothing of the stack when it runs all of it.
TEST(NoPlanReason, NamesWhatTheStackCannotRun) {
  const models::ModelSpec model = models::load_model("mixtral-8x7b");
  const costmodel::ClusterSpec cluster = costmodel::load_cluster("dgx-a100");
  planner::SearchResult r;
  planner::Candidate closest;
  closest.strategy.pp = 32, closest.strategy.dp = 2;
  closest.prediction.peak_memory_gib = 207.7;
  r.closest_infeasible = closest;
  r.infeasible_memory = 130;
  const costmodel::SoftwareStack old = costmodel::load_software_stack("megatron-2021");
  const std::string limited = no_plan_reason(model, "dgx-a100", cluster, 64, r, &old);
  EXPECT_NE(limited.find("207.7 GiB per GPU"), std::string::npos) << limited;
  EXPECT_NE(limited.find("stack megatron-2021 runs no expert parallelism"), std::string::npos) << limited;
  EXPECT_NE(limited.find("--stack NAME"), std::string::npos) << limited;
  const costmodel::SoftwareStack mcore = costmodel::load_software_stack("mcore-2024");
  const std::string full = no_plan_reason(model, "dgx-a100", cluster, 64, r, &mcore);
  EXPECT_EQ(full.find("runs no"), std::string::npos) << full;
  EXPECT_EQ(no_plan_reason(model, "dgx-a100", cluster, 64, r), full);  // no stack named: nothing to say
}

TEST(ScalingView, ParsesGpuCountsAndRefusesBadLists) {
  EXPECT_EQ(parse_gpu_counts("128,256, 512", "--gpus"), (std::vector<int>{128, 256, 512}));
  EXPECT_EQ(parse_gpu_counts("64", "--gpus"), (std::vector<int>{64}));
  for (const char* bad : {"", "128,", "0,8", "8,8", "12x", "-4", "1,,2", "99999999999"})
    EXPECT_THROW(parse_gpu_counts(bad, "--gpus"), InputError) << bad;
}

ScalingView two_counts() {
  ScalingView v;
  v.model = "gpt2-124m";
  v.cluster = "dgx-a100";
  v.device = "a100-sxm-80gb";
  // 8 GPUs: 64 x 1024 tokens per 1.0 s step = 8192 tok/s per GPU; 16 GPUs: 0.6 s
  // = 65536 / 0.6 / 16 = 6826.7 tok/s per GPU, 83.3% of the 8-GPU rate.
  ScalingPoint a{8, make_plan(2, 2, 2, 1.0, 0.1), "", 120};
  ScalingPoint b{16, make_plan(2, 2, 4, 0.6, 0.1), "", 200};
  ScalingPoint c{4, std::nullopt, "the smallest candidate needs 90 GiB", 40};
  v.points = {c, a, b};
  return v;
}

TEST(ScalingView, TableShowsEachCountAndTheScalingEfficiency) {
  const std::string t = format_scaling_table(two_counts());
  EXPECT_NE(t.find("no plan fits"), std::string::npos) << t;
  EXPECT_NE(t.find("4 GPUs: the smallest candidate needs 90 GiB"), std::string::npos) << t;
  EXPECT_NE(t.find("8 -> 16 GPUs (2x the GPUs) keeps 83.3% of the tokens/s per GPU"), std::string::npos) << t;
  EXPECT_EQ(t.find("days"), std::string::npos) << t;  // no target: no time-to-train columns
}

TEST(ScalingView, TargetAddsDaysGpuHoursAndCost) {
  ScalingView v = two_counts();
  v.target.tokens = 65536LL * 86400;  // 86,400 steps of 65,536 tokens
  v.target.gpu_hour_price = 2;
  const std::string t = format_scaling_table(v);
  // 8 GPUs: 86,400 x 1.0 s = 1 day, 8 x 24 = 192 GPU-hours, $384.
  EXPECT_NE(t.find("1 days"), std::string::npos) << t;
  EXPECT_NE(t.find("192"), std::string::npos) << t;
  EXPECT_NE(t.find("$384"), std::string::npos) << t;
  const auto j = scaling_json(v);
  ASSERT_EQ(j["points"].size(), 3u);
  EXPECT_TRUE(j["points"][0]["plan"].is_null());
  EXPECT_NEAR(j["points"][1]["time_to_train"]["gpu_hours"]["value"].get<double>(), 192.0, 1e-9);
  EXPECT_NEAR(j["points"][2]["tokens_per_s_per_gpu"].get<double>(), 65536.0 / 0.6 / 16, 1e-6);
  const std::string svg = scaling_svg(v);
  EXPECT_NE(svg.find("16 GPUs"), std::string::npos);
  EXPECT_NE(svg.find("days"), std::string::npos);
  EXPECT_NE(svg.find("the count&#39;s best plan"), std::string::npos) << "each bar is one count's best plan";
  EXPECT_EQ(svg.find("per stage"), std::string::npos) << "not the memory chart's legend";
  const std::string html = scaling_html(v);
  EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(html.find(svg), std::string::npos);
  EXPECT_NE(html.find("gpt2-124m on dgx-a100"), std::string::npos);
}

}  // namespace
}  // namespace strata::report
