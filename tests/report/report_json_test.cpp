#include <gtest/gtest.h>
#include <utility>
#include <vector>

#include "report/report_json.h"
#include "common/json_text.h"
#include "common/errors.h"
#include "tests/report/report_fixture.h"

namespace strata::report {
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
  planner::Strategy s{.dp = 2, .tp = 4, .pp = 8, .vpp = 3, .micro_batch = 2, .global_batch = 1024, .zero = 1,
                      .recompute = planner::Recompute::Full, .sequence_parallel = true,
                      .schedule = planner::ScheduleKind::Interleaved, .rank_order = "tp-pp-dp", .precision = {}};
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

TEST(MeasuredJson, RejectsOtherFiles) {
  EXPECT_THROW(parse_measured_json("not json", "m.json"), InputError);
  EXPECT_THROW(parse_measured_json(R"({"command":"plan","plans":[]})", "m.json"), InputError);
  EXPECT_THROW(parse_measured_json(R"({"command":"validate","model":"m","cluster":"c","ranks":2,
                                       "plans":[{"status":"ok","measured_step_s":1}]})",
                                   "m.json"),
               InputError);  // no strategy
}

}  // namespace
}  // namespace strata::report
