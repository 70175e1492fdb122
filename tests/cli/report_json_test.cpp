#include <gtest/gtest.h>
#include <utility>
#include <vector>

#include "cli/report_json.h"
#include "common/json_text.h"
#include "cli/validate_report.h"
#include "common/errors.h"
#include "tests/cli/report_fixture.h"

namespace strata::cli {
namespace {

using nlohmann::json;

TEST(ReportJson, HasTheDesignKeysForEveryStrategy) {
  const auto d = testing::make_report();
  const json j = strata::parse_json(report_json(d));
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["model"], "toy-<1b>");
  EXPECT_EQ(j["gpus"], 16);
  EXPECT_EQ(j["best_index"], 1);
  ASSERT_EQ(j["strategies"].size(), 3u);
  for (const auto& s : j["strategies"]) {
    for (const char* k : {"dp", "tp", "pp", "vpp", "micro_batch", "global_batch", "zero", "recompute",
                          "sequence_parallel", "schedule"})
      EXPECT_TRUE(s["strategy"].contains(k)) << k;
    for (const char* k : {"iteration_s", "tokens_per_s", "model_tflops_per_gpu", "hardware_tflops_per_gpu", "mfu",
                          "peak_memory_gib", "bubble_fraction", "breakdown_s"})
      EXPECT_TRUE(s["prediction"].contains(k)) << k;
    for (const char* k : {"compute", "tp_comm", "pp_comm", "dp_comm", "optimizer", "bubble"})
      EXPECT_TRUE(s["prediction"]["breakdown_s"].contains(k)) << k;
    EXPECT_TRUE(s.contains("fits_memory"));
  }
  EXPECT_EQ(j["strategies"][2]["fits_memory"], false);
  EXPECT_EQ(j["strategies"][0]["timeline"].size(), d.entries[0].timeline.size());
  EXPECT_TRUE(j["strategies"][2]["measured"].is_null());
}

TEST(StrategyJson, RoundTrips) {
  planner::Strategy s;
  s.dp = 2;
  s.tp = 4;
  s.pp = 8;
  s.vpp = 3;
  s.micro_batch = 2;
  s.global_batch = 1024;
  s.zero = 1;
  s.recompute = planner::Recompute::Full;
  s.sequence_parallel = true;
  s.schedule = planner::ScheduleKind::Interleaved;
  s.rank_order = "tp-pp-dp";
  EXPECT_EQ(strategy_from_json(strategy_to_json(s), "x"), s);
  s.recompute = planner::Recompute::Selective;
  s.schedule = planner::ScheduleKind::GPipe;
  EXPECT_EQ(strategy_from_json(strategy_to_json(s), "x"), s);
}

TEST(StrategyJson, NamesTheMissingOrBadKey) {
  json j = strategy_to_json(planner::Strategy{});
  j.erase("tp");
  try {
    strategy_from_json(j, "f.json: plans[0]");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("f.json: plans[0]: missing key 'tp'"), std::string::npos);
  }
  j = strategy_to_json(planner::Strategy{});
  j["schedule"] = "zigzag";
  EXPECT_THROW(strategy_from_json(j, "x"), InputError);
  // Integers are range-checked before narrowing: 2^32 + 2 is not dp 2.
  for (const auto& [key, value] : std::vector<std::pair<const char*, json>>{
           {"dp", json(4294967298ULL)}, {"tp", json(-4294967295LL)}, {"pp", json(2.5)}, {"vpp", json("1")}}) {
    j = strategy_to_json(planner::Strategy{});
    j[key] = value;
    try {
      strategy_from_json(j, "f.json: plans[0]");
      ADD_FAILURE() << key << " = " << value.dump() << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("key '") + key + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(MeasuredJson, ReadsWhatValidateWrites) {
  ValidateReport r;
  r.model = "tiny";
  r.cluster = "local-cpu";
  r.ranks = 2;
  r.steps = 10;
  r.warmup = 2;
  PlanRun a;
  a.name = "top 1";
  a.strategy.dp = 2;
  a.strategy.global_batch = 8;
  a.predicted_s = 0.02;
  a.status = "ok";
  a.measured_s = 0.025;
  PlanRun b = a;
  b.name = "baseline tp";
  b.strategy.dp = 1;
  b.strategy.tp = 2;
  b.status = "failed";
  b.exit_code = 1;
  b.error = "error: boom";
  r.runs = {a, b};
  r.summary = summarize(r.runs);
  const auto f = parse_measured_json(validate_json(r), "v.json");
  EXPECT_EQ(f.model, "tiny");
  EXPECT_EQ(f.ranks, 2);
  ASSERT_EQ(f.runs.size(), 2u);
  EXPECT_EQ(f.runs[0].strategy, a.strategy);
  EXPECT_EQ(f.runs[0].measured.status, "ok");
  EXPECT_DOUBLE_EQ(f.runs[0].measured.step_s, 0.025);
  EXPECT_EQ(f.runs[1].strategy, b.strategy);
  EXPECT_EQ(f.runs[1].measured.status, "failed");
  EXPECT_EQ(f.runs[1].measured.error, "error: boom");
}

TEST(MeasuredJson, RejectsOtherFiles) {
  EXPECT_THROW(parse_measured_json("not json", "m.json"), InputError);
  EXPECT_THROW(parse_measured_json(R"({"command":"plan","plans":[]})", "m.json"), InputError);
  EXPECT_THROW(parse_measured_json(R"({"command":"validate","model":"m","cluster":"c","ranks":2,
                                       "plans":[{"status":"ok","measured_step_s":1}]})",
                                   "m.json"),
               InputError);  // no strategy
}

}  // namespace
}  // namespace strata::cli
