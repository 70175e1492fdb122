#include "report/format_json.h"
#include "common/json_text.h"

#include <gtest/gtest.h>

#include "costmodel/cluster_spec.h"
#include "tests/design_plan_keys.h"
#include "tests/report/format_fixture.h"

namespace strata::report {
namespace {

using nlohmann::json;

using strata::testing::expect_design_plan_keys;

TEST(FormatPlanJson, ParsesAndHasEveryDesignKeyBestFirst) {
  auto r = testing::make_report();
  json j = strata::parse_json(format_plan_json(r));
  EXPECT_EQ(j["schema_version"], kJsonSchemaVersion);
  EXPECT_EQ(j["candidates_evaluated"], 120);
  EXPECT_DOUBLE_EQ(j["search_s"].get<double>(), 0.012);
  ASSERT_EQ(j["plans"].size(), 2u);
  for (const auto& p : j["plans"]) expect_design_plan_keys(p);
  const auto& best = j["plans"][0];
  EXPECT_EQ(best["model"], "gpt2-124m");
  EXPECT_EQ(best["cluster"], "dgx-a100");
  EXPECT_EQ(best["gpus"], 8);
  EXPECT_EQ(best["strategy"]["tp"], 2);
  EXPECT_EQ(best["strategy"]["recompute"], "selective");
  EXPECT_EQ(best["strategy"]["sequence_parallel"], true);
  EXPECT_DOUBLE_EQ(best["prediction"]["iteration_s"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(best["prediction"]["breakdown_s"]["bubble"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(j["plans"][1]["prediction"]["iteration_s"].get<double>(), 1.25);
}

TEST(FormatSimulationJson, IsOnePlanObjectWithSchemaVersion) {
  auto r = testing::make_report();
  r.plans.resize(1);
  json j = strata::parse_json(format_simulation_json(r));
  expect_design_plan_keys(j);
  EXPECT_EQ(j["schema_version"], kJsonSchemaVersion);
  EXPECT_FALSE(j.contains("plans"));
}

TEST(FormatCatalogJson, ModelsAndClustersParse) {
  json m = strata::parse_json(format_models_json({{models::load_model("llama2-7b"), 6.7e9}}));
  ASSERT_EQ(m["models"].size(), 1u);
  EXPECT_EQ(m["models"][0]["name"], "llama2-7b");
  EXPECT_EQ(m["models"][0]["layers"], 32);
  json c = strata::parse_json(format_clusters_json({costmodel::load_cluster("dgx-a100")}));
  ASSERT_EQ(c["clusters"].size(), 1u);
  EXPECT_EQ(c["clusters"][0]["name"], "dgx-a100");
  EXPECT_EQ(c["clusters"][0]["gpus_per_node"], 8);
}

}  // namespace
}  // namespace strata::report
