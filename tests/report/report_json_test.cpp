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
  // What a layout of the same dimensions runs differently: Megatron-Core modules, the block
  // method's layers, the EP overlap, the delayed wgrad.
  s.recompute_modules.mla_up_proj = s.recompute_modules.mlp = true;
  s.ep_overlap = s.delay_wgrad = true;
  const json j = strategy_to_json(s);
  EXPECT_EQ(j["recompute_modules"], json({"mla_up_proj", "mlp"}));
  EXPECT_EQ(strategy_from_json(j, "x"), s);
  s.recompute_modules = {};
  s.recompute = planner::Recompute::Full;
  s.recompute_layers = 2;
  EXPECT_EQ(strategy_from_json(strategy_to_json(s), "x"), s);
  json bad = strategy_to_json(s);
  bad["recompute_modules"] = {"attention"};
  try {
    strategy_from_json(bad, "f.json: plans[0]");
    ADD_FAILURE() << "an unknown module was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("f.json: plans[0]: recompute module 'attention'"), std::string::npos)
        << e.what();
  }
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

// validate's host, cores and per-run load come through to the report, and a load above the
// cores is called out: those step times were measured on a shared machine.
TEST(MeasuredJson, HostAndLoadReachTheReportAndABusyHostIsNamed) {
  json plan = {{"name", "p1"}, {"strategy", strategy_to_json(planner::Strategy{})}, {"status", "ok"},
               {"measured_step_s", 2.0}, {"host_load_1m", 0.5}};
  json doc = {{"command", "validate"}, {"model", "m"}, {"cluster", "c"}, {"ranks", 1},
              {"host", "EPYC 9000 (family 26)"}, {"host_cores", 2}, {"plans", json::array({plan})}};
  MeasuredFile f = parse_measured_json(doc.dump(), "m.json");
  EXPECT_EQ(f.host, "EPYC 9000 (family 26)");
  EXPECT_EQ(f.host_cores, 2);
  ASSERT_EQ(f.runs.size(), 1u);
  EXPECT_DOUBLE_EQ(f.runs[0].measured.host_load_1m, 0.5);

  ReportData d;
  d.measured_host = f.host;
  d.measured_host_cores = f.host_cores;
  ReportEntry quiet, busy, unknown;
  quiet.measured = f.runs[0].measured;
  busy.measured = f.runs[0].measured;
  busy.measured->host_load_1m = 3.5;  // above 2 cores
  unknown.measured = MeasuredStep{"ok", 1.0, ""};
  d.entries = {quiet, unknown};
  EXPECT_EQ(measured_conditions(d), "on EPYC 9000 (family 26) (2 cores); host load 0.5 .. 0.5 (1-minute average after each run)");
  d.entries.push_back(busy);
  const std::string c = measured_conditions(d);
  EXPECT_NE(c.find("host load 0.5 .. 3.5"), std::string::npos) << c;
  EXPECT_NE(c.find("warning: the load exceeded the 2 cores after 1 run:"), std::string::npos) << c;
  EXPECT_EQ(strata::parse_json(report_json(d))["measured_conditions"], c);
  EXPECT_EQ(strata::parse_json(report_json(d))["strategies"][2]["measured"]["host_load_1m"], 3.5);
  EXPECT_TRUE(strata::parse_json(report_json(d))["strategies"][1]["measured"]["host_load_1m"].is_null());
  // Files without the fields read as unknown; a negative load is refused by name.
  doc.erase("host");
  doc.erase("host_cores");
  doc["plans"][0].erase("host_load_1m");
  f = parse_measured_json(doc.dump(), "m.json");
  EXPECT_EQ(f.host, "");
  EXPECT_EQ(f.runs[0].measured.host_load_1m, -1);
  doc["plans"][0]["host_load_1m"] = -2;
  try {
    parse_measured_json(doc.dump(), "m.json");
    ADD_FAILURE() << "a negative load was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("m.json: plans[0]: host_load_1m (-2)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace strata::report
