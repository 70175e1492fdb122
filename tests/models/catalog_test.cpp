#include "models/catalog.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include <cmath>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "models/model_spec.h"
#include "models/model_stats.h"

using namespace strata::models;

namespace {
std::filesystem::path catalog_dir() {
  return std::filesystem::path(STRATA_SOURCE_DIR) / "models" / "catalog";
}
}  // namespace

TEST(Catalog, EveryFileIsEmbeddedUnderItsStem) {
  std::set<std::string> on_disk;
  for (const auto& f : std::filesystem::directory_iterator(catalog_dir()))
    if (f.path().extension() == ".yaml") on_disk.insert(f.path().stem().string());
  std::set<std::string> embedded;
  for (const auto& e : model_catalog()) embedded.insert(e.name);
  // A new catalog file must be listed in models/CMakeLists.txt, and its `name:` must be
  // its file stem (the catalog is keyed by `name:`).
  EXPECT_EQ(on_disk, embedded);
  EXPECT_EQ(embedded.size(), model_catalog().size()) << "duplicate names in the catalog";
}

TEST(Catalog, EveryEntryLoadsValidatesAndCitesASource) {
  for (const auto& e : model_catalog()) {
    SCOPED_TRACE(e.name);
    ModelSpec m;
    ASSERT_NO_THROW(m = load_model(e.name));
    EXPECT_EQ(m.name, e.name);
    EXPECT_NO_THROW(validate(m, e.name));
    EXPECT_FALSE(e.source.empty()) << "catalog entries must say where their numbers come from";
    EXPECT_GT(total_params(m), 0);
  }
}

TEST(Catalog, HoldsTheModelsTheIssueAsksFor) {
  for (const char* name :
       {"gpt3-175b", "megatron-1.7b", "megatron-3.6b", "megatron-7.5b", "megatron-18.4b",
        "megatron-39.1b", "megatron-76.1b", "megatron-145.6b", "megatron-310.1b",
        "megatron-529.6b", "megatron-1008b", "llama2-7b", "llama2-13b", "llama2-70b",
        "llama3-8b", "llama3-70b", "llama3-405b", "gpt2-124m", "tiny", "tiny-llama"})
    EXPECT_TRUE(find_catalog_model(name).has_value()) << name;
  EXPECT_FALSE(find_catalog_model("gpt3-17b").has_value());
}

TEST(Catalog, PublishedShapes) {
  ModelSpec g = load_model("gpt3-175b");
  EXPECT_EQ(g.layers, 96);
  EXPECT_EQ(g.hidden, 12288);
  EXPECT_EQ(g.heads, 96);
  EXPECT_EQ(g.seq_len, 2048);
  EXPECT_EQ(g.vocab, 51200);
  ModelSpec l = load_model("llama2-70b");
  EXPECT_EQ(l.kv_heads, 8);
  EXPECT_EQ(l.ffn, 28672);
  EXPECT_EQ(l.activation, Activation::SwiGlu);
  EXPECT_EQ(l.norm, Norm::RmsNorm);
  EXPECT_EQ(l.positions, Positions::Rope);
  EXPECT_FALSE(l.tied_embeddings);
  ModelSpec l3 = load_model("llama3-405b");
  EXPECT_EQ(l3.layers, 126);
  EXPECT_EQ(l3.hidden, 16384);
  EXPECT_EQ(l3.vocab, 128256);
  ModelSpec t = load_model("tiny");
  EXPECT_EQ(t.layers, 4);
  EXPECT_EQ(t.head_dim(), 16);
  ModelSpec tl = load_model("tiny-llama");
  EXPECT_EQ(tl.kv_heads, 2);
  EXPECT_EQ(tl.positions, Positions::Rope);
}

// The Megatron weak-scaling models match shared/validation/megatron-2021.yaml: same
// shapes, and our parameter count within 3% of the paper's rounded figure.
TEST(Catalog, MegatronModelsMatchTheValidationTable) {
  auto path = std::filesystem::path(STRATA_SOURCE_DIR) / ".." / "shared" / "validation" /
              "megatron-2021.yaml";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  YAML::Node table = YAML::LoadFile(path.string());
  int checked = 0;
  for (const auto& row : table["runs"]) {
    double pb = row["params_b"].as<double>();
    std::string name = fmt::format("megatron-{}b", pb == std::floor(pb) ? fmt::format("{:.0f}", pb)
                                                                        : fmt::format("{}", pb));
    SCOPED_TRACE(name);
    ModelSpec m = load_model(name);
    EXPECT_EQ(m.layers, row["layers"].as<std::int64_t>());
    EXPECT_EQ(m.hidden, row["hidden"].as<std::int64_t>());
    EXPECT_EQ(m.heads, row["heads"].as<std::int64_t>());
    EXPECT_EQ(m.vocab, table["vocab"].as<std::int64_t>());
    EXPECT_EQ(m.seq_len, table["seq_len"].as<std::int64_t>());
    EXPECT_EQ(m.ffn, 4 * m.hidden);
    EXPECT_NEAR(total_params(m) / 1e9, pb, 0.03 * pb);
    ++checked;
  }
  EXPECT_EQ(checked, 10);
}

TEST(Catalog, ClosestNamesRankByEditDistance) {
  auto c = closest_model_names("gpt3-17b");
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.front(), "gpt3-175b");
  EXPECT_LE(c.size(), 3u);
  c = closest_model_names("LLAMA3-8B");
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.front(), "llama3-8b");
  c = closest_model_names("llama3");  // a prefix suggests its family
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.front().rfind("llama3", 0), 0u);
  EXPECT_TRUE(closest_model_names("qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq").empty());
}
