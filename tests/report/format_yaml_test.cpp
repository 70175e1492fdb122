#include "report/format_yaml.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "costmodel/cluster_spec.h"
#include "models/model_spec.h"
#include "planner/plan.h"
#include "tests/report/format_fixture.h"

namespace strata::report {
namespace {

void expect_same_plan(const planner::Plan& a, const planner::Plan& b) {
  EXPECT_EQ(a.strategy, b.strategy);
  EXPECT_EQ(a.stage_layers, b.stage_layers);
  EXPECT_EQ(a.cluster, b.cluster);
  EXPECT_EQ(models::to_yaml(a.model), models::to_yaml(b.model));
  EXPECT_DOUBLE_EQ(a.prediction.iteration_s, b.prediction.iteration_s);
  EXPECT_DOUBLE_EQ(a.prediction.peak_memory_gib, b.prediction.peak_memory_gib);
}

TEST(FormatSimulationYaml, IsAPlanFileThatRoundTrips) {
  auto r = testing::make_report();
  r.plans.resize(1);
  auto back = planner::parse_plan_yaml(format_simulation_yaml(r), "<simulate yaml>");
  expect_same_plan(back, r.plans[0]);
}

TEST(FormatPlanYaml, EveryPlanEntryRoundTripsThroughParsePlanYaml) {
  auto r = testing::make_report();
  YAML::Node doc = YAML::Load(format_plan_yaml(r));
  EXPECT_EQ(doc["schema_version"].as<int>(), 1);
  EXPECT_EQ(doc["candidates_evaluated"].as<long long>(), 120);
  EXPECT_EQ(doc["model"].as<std::string>(), "gpt2-124m");
  ASSERT_EQ(doc["plans"].size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    YAML::Emitter e;
    e << doc["plans"][i];
    auto back = planner::parse_plan_yaml(e.c_str(), "<plan yaml entry>");
    expect_same_plan(back, r.plans[i]);
  }
}

TEST(FormatCatalogYaml, ModelsLoadBackAsModelSpecs) {
  auto spec = models::load_model("llama3-8b");
  YAML::Node doc = YAML::Load(format_models_yaml({{spec, 8e9}}));
  ASSERT_EQ(doc["models"].size(), 1u);
  YAML::Emitter e;
  e << doc["models"][0];
  auto back = models::parse_model_yaml(e.c_str(), "<models yaml>");
  EXPECT_EQ(models::to_yaml(back), models::to_yaml(spec));
  YAML::Node c = YAML::Load(format_clusters_yaml({costmodel::load_cluster("dgx-h100")}));
  ASSERT_EQ(c["clusters"].size(), 1u);
  YAML::Emitter ce;
  ce << c["clusters"][0];
  EXPECT_EQ(costmodel::parse_cluster_spec(ce.c_str(), "<clusters yaml>").name, "dgx-h100");
}

}  // namespace
}  // namespace strata::report
