// Plan I/O: the even stage map, YAML round trip, the DESIGN.md JSON keys, and strict
// rejection of hand-edited inconsistent plans with an error naming the field.
#include "planner/plan.h"
#include "common/json_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "tests/test_models.h"

using namespace strata::planner;
using strata::models::ModelSpec;

namespace {

ModelSpec gpt_small() { return strata::testing::test_model("gpt-small", 10, 256, 8, 8, 1024, 5000, 128); }

Plan sample_plan() {
  Plan p;
  p.model = gpt_small();
  p.cluster = "dgx-a100";
  p.strategy = {.dp = 2, .tp = 2, .pp = 2, .vpp = 1, .micro_batch = 2, .global_batch = 32, .zero = 1,
                .recompute = Recompute::Selective, .sequence_parallel = true, .schedule = ScheduleKind::OneFOneB,
                .precision = {}};
  p.stage_layers = {{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9, 10, 11}};
  Prediction& q = p.prediction;
  q.iteration_s = 1.2345678901234567;
  q.tokens_per_s = 3317.25;
  q.model_tflops_per_gpu = 101.1;
  q.hardware_tflops_per_gpu = 120.7;
  q.mfu = 0.1 + 0.2;  // not exactly representable: must still round-trip
  q.peak_memory_gib = 61.5;
  q.stage_memory_gib = {61.5, 40.25};
  q.bubble_fraction = 1.0 / 17.0;
  q.breakdown_s = {0.9, 0.1, 0.01, 0.05, 0.02, 0.15};
  q.fits_memory = false;
  q.notes = {"gemm: datasheet roofline (not calibrated)", "quote \" and: colon"};
  return p;
}

std::string error_of(const std::string& yaml) {
  try {
    parse_plan_yaml(yaml, "plan.yaml");
  } catch (const strata::InputError& e) {
    return e.what();
  }
  return "";
}

// Replaces the first occurrence of `from` (which must exist) in the sample plan's YAML.
std::string edited(const std::string& from, const std::string& to) {
  std::string y = plan_to_yaml(sample_plan());
  auto pos = y.find(from);
  EXPECT_NE(pos, std::string::npos) << from << "\n" << y;
  if (pos == std::string::npos) return y;
  return y.replace(pos, from.size(), to);
}

}  // namespace

TEST(EvenStageLayers, CoversEveryLayerGroupOnceInOrder) {
  for (int layers : {1, 2, 5, 7, 10, 24, 96})
    for (int pp : {1, 2, 3, 4, 8})
      for (int vpp : {1, 2, 3}) {
        ModelSpec m = gpt_small();
        m.layers = layers;
        if (layers < pp * vpp) {
          EXPECT_THROW(even_stage_layers(m, pp, vpp), strata::InputError);
          continue;
        }
        auto sl = even_stage_layers(m, pp, vpp);
        ASSERT_EQ(static_cast<int>(sl.size()), pp * vpp);
        EXPECT_NO_THROW(check_stage_layers(sl, m, pp, vpp));
        auto blocks = blocks_per_stage(sl, m);
        std::int64_t lo = *std::min_element(blocks.begin(), blocks.end());
        std::int64_t hi = *std::max_element(blocks.begin(), blocks.end());
        EXPECT_LE(hi - lo, 1) << layers << " " << pp << " " << vpp;
        EXPECT_EQ(sl.front().front(), 0);
        EXPECT_EQ(sl.back().back(), layers + 1);
      }
  // 10 blocks on 4 stages: the two extra blocks go to the middle stages.
  auto b = blocks_per_stage(even_stage_layers(gpt_small(), 4, 1), gpt_small());
  EXPECT_EQ(b, (std::vector<std::int64_t>{2, 3, 3, 2}));
}

TEST(CheckStageLayers, RejectsGapsRepeatsAndWrongCounts) {
  ModelSpec m = gpt_small();
  EXPECT_THROW(check_stage_layers({{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11}}, m, 4, 1),
               strata::InputError);
  EXPECT_THROW(check_stage_layers({{0, 1, 2, 3, 4}, {6, 7, 8, 9, 10, 11}}, m, 2, 1),
               strata::InputError);
  EXPECT_THROW(check_stage_layers({{0, 1, 2, 3, 4, 5}, {5, 6, 7, 8, 9, 10, 11}}, m, 2, 1),
               strata::InputError);
  EXPECT_THROW(check_stage_layers({{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}}, m, 2, 1),
               strata::InputError);
  EXPECT_THROW(check_stage_layers({{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {}}, m, 2, 1),
               strata::InputError);
  EXPECT_NO_THROW(check_stage_layers({{0}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}, m, 2, 1));
}

TEST(PlanYaml, RoundTripsEveryField) {
  Plan p = sample_plan();
  p.prediction.breakdown_s.straggler = 0.0125;  // written only when > 0; must read back
  const std::string y = plan_to_yaml(p);
  Plan q = parse_plan_yaml(y, "plan.yaml");
  EXPECT_EQ(q.schema_version, 1);
  EXPECT_EQ(strata::models::to_yaml(q.model), strata::models::to_yaml(p.model));
  EXPECT_EQ(q.cluster, p.cluster);
  EXPECT_EQ(q.strategy, p.strategy);
  EXPECT_EQ(q.stage_layers, p.stage_layers);
  const Prediction &a = p.prediction, &b = q.prediction;
  EXPECT_EQ(b.iteration_s, a.iteration_s);  // exact: shortest round-trip formatting
  EXPECT_EQ(b.tokens_per_s, a.tokens_per_s);
  EXPECT_EQ(b.model_tflops_per_gpu, a.model_tflops_per_gpu);
  EXPECT_EQ(b.hardware_tflops_per_gpu, a.hardware_tflops_per_gpu);
  EXPECT_EQ(b.mfu, a.mfu);
  EXPECT_EQ(b.peak_memory_gib, a.peak_memory_gib);
  EXPECT_EQ(b.stage_memory_gib, a.stage_memory_gib);
  EXPECT_EQ(b.bubble_fraction, a.bubble_fraction);
  EXPECT_EQ(b.breakdown_s.compute, a.breakdown_s.compute);
  EXPECT_EQ(b.breakdown_s.tp_comm, a.breakdown_s.tp_comm);
  EXPECT_EQ(b.breakdown_s.pp_comm, a.breakdown_s.pp_comm);
  EXPECT_EQ(b.breakdown_s.dp_comm, a.breakdown_s.dp_comm);
  EXPECT_EQ(b.breakdown_s.optimizer, a.breakdown_s.optimizer);
  EXPECT_EQ(b.breakdown_s.bubble, a.breakdown_s.bubble);
  EXPECT_EQ(b.breakdown_s.straggler, a.breakdown_s.straggler);
  EXPECT_EQ(b.fits_memory, a.fits_memory);
  EXPECT_EQ(b.notes, a.notes);
  // Writing the parsed plan again gives the same text.
  EXPECT_EQ(plan_to_yaml(q), y);
  // Block recompute (written only when set) reads back too.
  p.strategy.recompute = Recompute::Full;
  p.strategy.recompute_layers = 2;
  const std::string partial = plan_to_yaml(p);
  EXPECT_NE(partial.find("recompute_layers: 2"), std::string::npos) << partial;
  EXPECT_EQ(parse_plan_yaml(partial, "plan.yaml").strategy.recompute_layers, 2);
}

TEST(PlanYaml, RoundTripsInterleavedLlamaAndNonFiniteNumbers) {
  Plan p;
  p.model = strata::testing::test_model("tiny-llama", 8, 64, 4, 2, 176, 256, 32);
  p.model.activation = strata::models::Activation::SwiGlu;
  p.model.norm = strata::models::Norm::RmsNorm;
  p.model.positions = strata::models::Positions::Rope;
  p.model.tied_embeddings = false;
  p.cluster = "local-cpu";
  p.strategy.pp = 2;
  p.strategy.vpp = 2;
  p.strategy.schedule = ScheduleKind::Interleaved;
  p.strategy.global_batch = 4;
  p.strategy.rank_order = "dp-tp-pp";
  p.stage_layers = even_stage_layers(p.model, 2, 2);
  p.prediction.iteration_s = 1.5;
  Plan q = parse_plan_yaml(plan_to_yaml(p), "p.yaml");
  EXPECT_EQ(q.strategy, p.strategy);
  EXPECT_EQ(strata::models::to_yaml(q.model), strata::models::to_yaml(p.model));
  EXPECT_EQ(q.stage_layers, p.stage_layers);
  // Non-finite stored predictions are written (YAML .inf / .nan, JSON null) but never read
  // back as a prediction: the loader refuses them by field (StoredPredictionIsChecked).
  p.prediction.iteration_s = std::numeric_limits<double>::infinity();
  p.prediction.mfu = std::nan("");
  EXPECT_NE(plan_to_yaml(p).find("iteration_s: .inf"), std::string::npos);
  EXPECT_THROW(parse_plan_yaml(plan_to_yaml(p), "p.yaml"), strata::InputError);
  auto j = strata::parse_json(plan_to_json(p));
  EXPECT_TRUE(j["prediction"]["iteration_s"].is_null());
}

// A stored prediction that no simulation produces is refused on load, naming the field:
// a hand-edited plan (negative step time, MFU 700%) must not reach train, export or compare.
TEST(PlanYaml, StoredPredictionIsChecked) {
  const std::string good = plan_to_yaml(sample_plan());
  EXPECT_NO_THROW(parse_plan_yaml(good, "p.yaml"));
  const std::pair<const char*, const char*> bad[] = {
      {"iteration_s", "-2.5"}, {"iteration_s", "-.inf"},      {"iteration_s", ".nan"},
      {"iteration_s", ".inf"}, {"mfu", "7"},                  {"mfu", "-0.1"},
      {"mfu", ".nan"},         {"tokens_per_s", "-1"},        {"peak_memory_gib", "-3"},
      {"bubble_fraction", "1.5"}, {"model_tflops_per_gpu", ".inf"}, {"compute", "-1"},
      {"straggler", ".nan"}};
  for (const auto& [key, value] : bad) {
    SCOPED_TRACE(std::string(key) + ": " + value);
    std::string text = good;
    std::size_t pos = text.find(std::string(key) + ": ");
    if (std::string(key) == "straggler") {
      pos = text.find("ep_comm: ");
      ASSERT_NE(pos, std::string::npos);
      const std::size_t eol = text.find('\n', pos);
      const std::string indent = text.substr(text.rfind('\n', pos) + 1, pos - text.rfind('\n', pos) - 1);
      text.insert(eol + 1, indent + "straggler: " + value + "\n");
    } else {
      ASSERT_NE(pos, std::string::npos) << text;
      const std::size_t eol = text.find('\n', pos);
      text.replace(pos, eol - pos, std::string(key) + ": " + value);
    }
    try {
      parse_plan_yaml(text, "p.yaml");
      ADD_FAILURE() << "accepted";
    } catch (const strata::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

TEST(PlanYaml, LoadsFromAFileAndDefaultsOptionalSections) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("strata_plan_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "plan.yaml").string();
  strata::write_file_atomic(path, plan_to_yaml(sample_plan()));
  EXPECT_EQ(load_plan(path).strategy, sample_plan().strategy);
  // A hand-written plan: model, cluster, strategy only.
  const std::string minimal =
      "schema_version: 1\n"
      "model: {name: m, layers: 4, hidden: 64, heads: 4, vocab: 256, seq_len: 32}\n"
      "cluster: local-cpu\n"
      "strategy: {dp: 1, tp: 2, pp: 2, micro_batch: 1, global_batch: 8}\n";
  strata::write_file_atomic(path, minimal);
  Plan m = load_plan(path);
  EXPECT_EQ(m.strategy.schedule, ScheduleKind::OneFOneB);
  EXPECT_EQ(m.stage_layers, even_stage_layers(m.model, 2, 1));
  EXPECT_TRUE(m.prediction.fits_memory);
  fs::remove_all(dir);
  EXPECT_THROW(load_plan(path), strata::InputError);
}

TEST(PlanYaml, InconsistentHandEditsNameTheField) {
  auto expect_error = [](const std::string& yaml, std::initializer_list<const char*> parts) {
    const std::string e = error_of(yaml);
    ASSERT_FALSE(e.empty()) << "no error for:\n" << yaml;
    for (const char* part : parts) EXPECT_NE(e.find(part), std::string::npos) << e;
    EXPECT_EQ(e.rfind("plan.yaml", 0), 0u) << e;  // names the file first
  };
  expect_error(edited("tp: 2\n", "tp: 3\n"), {"strategy.tp (3) must divide model.heads (8)"});
  expect_error(edited("rank_grid: {dp: 2, tp: 2", "rank_grid: {dp: 2, tp: 4"),
               {"rank_grid.tp", "strategy.tp (2)"});
  expect_error(edited("gpus: 8", "gpus: 16"), {"gpus", "16", "8"});
  expect_error(edited("order: tp-dp-pp", "order: dp-tp-pp"), {"rank_grid.order"});
  expect_error(edited("[5, 6, 7", "[6, 7"), {"stage_layers[1][0] is 6, expected 5"});
  expect_error(edited("[0, 1, 2, 3, 4]", "[0, 1, 2, 3, 4, 5]"), {"stage_layers[1][0] is 5, expected 6"});
  expect_error(edited("  - [5, 6, 7, 8, 9, 10, 11]\n", ""), {"stage_layers", "1 virtual stages",
                                                             "expected strategy.pp (2)"});
  expect_error(edited("schema_version: 1", "schema_version: 2"), {"schema_version", "2"});
  // Range-checked before narrowing: 2^32 + 1 is not schema version 1.
  expect_error(edited("schema_version: 1", "schema_version: 4294967297"), {"schema_version", "4294967297"});
  expect_error(edited("schema_version: 1", "schema_version: 1\nschema_version: 1"), {"duplicate key 'schema_version'"});
  expect_error(edited("schedule: 1f1b", "schedule: zero-bubble"), {"strategy.schedule", "zero-bubble"});
  expect_error(edited("zero: 1", "zero: 1\n  zer0: 1"), {"zer0", "unknown key"});
  expect_error(edited("cluster: dgx-a100", "clustr: dgx-a100"), {"clustr"});
  expect_error(edited("heads: 8", "heads: -8"), {"model"});
  expect_error(edited("stage_memory_gib: [61.5, 40.25]", "stage_memory_gib: [61.5]"),
               {"stage_memory_gib", "expected one per pipeline stage (2)"});
  expect_error(edited("compute: 0.9", "compute: fast"), {"breakdown_s.compute", "fast"});
  expect_error(edited("global_batch: 32", "global_batch: 30"), {"strategy.global_batch (30)"});
  expect_error("schema_version: 1\n", {"model", "missing"});
  expect_error("[1, 2]\n", {"mapping"});
}

TEST(PlanJson, HasExactlyTheDesignKeys) {
  auto j = strata::parse_json(plan_to_json(sample_plan()));
  auto keys = [](const nlohmann::json& o) {
    std::set<std::string> k;
    for (auto it = o.begin(); it != o.end(); ++it) k.insert(it.key());
    return k;
  };
  EXPECT_EQ(keys(j), (std::set<std::string>{"schema_version", "model", "cluster", "gpus", "strategy",
                                            "prediction", "fits_memory", "stage_layers", "stack",
                                            "seq_len"}));
  EXPECT_EQ(keys(j["strategy"]),
            (std::set<std::string>{"dp", "tp", "pp", "cp", "vpp", "micro_batch", "global_batch", "zero",
                                   "recompute", "sequence_parallel", "schedule", "ep", "etp"}));
  EXPECT_EQ(keys(j["prediction"]),
            (std::set<std::string>{"iteration_s", "tokens_per_s", "model_tflops_per_gpu",
                                   "hardware_tflops_per_gpu", "mfu", "peak_memory_gib",
                                   "bubble_fraction", "breakdown_s", "uncertainty",
                                   "peak_memory_parts_gib"}));
  // No validation residuals for the sample's stack: the band is null, never a made-up number.
  EXPECT_TRUE(j["prediction"]["uncertainty"].is_null());
  EXPECT_EQ(keys(j["prediction"]["breakdown_s"]),
            (std::set<std::string>{"compute", "tp_comm", "cp_comm", "pp_comm", "dp_comm", "optimizer",
                                   "bubble", "ep_comm", "straggler", "host_wait"}));
  EXPECT_EQ(j["model"], "gpt-small");
  EXPECT_EQ(j["cluster"], "dgx-a100");
  EXPECT_EQ(j["gpus"], 8);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["strategy"]["schedule"], "1f1b");
  EXPECT_EQ(j["strategy"]["recompute"], "selective");
  EXPECT_EQ(j["strategy"]["sequence_parallel"], true);
  EXPECT_EQ(j["fits_memory"], false);
  EXPECT_EQ(j["prediction"]["iteration_s"].get<double>(), sample_plan().prediction.iteration_s);
  EXPECT_EQ(j["prediction"]["mfu"].get<double>(), 0.1 + 0.2);
  EXPECT_EQ(j["stage_layers"].size(), 2u);
  EXPECT_EQ(j["stage_layers"][1][0], 5);
}

TEST(PlanYaml, RoundTripsThePrecisionAndRefusesAnUnknownOne) {
  Plan p = sample_plan();
  p.cluster = "dgx-h100";
  p.strategy.precision = "fp8";
  p.prediction.precision = "fp8";
  const std::string y = plan_to_yaml(p);
  EXPECT_NE(y.find("precision: fp8"), std::string::npos) << y;
  const Plan q = parse_plan_yaml(y, "plan.yaml");
  EXPECT_EQ(q.strategy.precision, "fp8");
  EXPECT_EQ(q.prediction.precision, "fp8");
  EXPECT_EQ(q.strategy, p.strategy);
  EXPECT_EQ(plan_to_yaml(q), y);
  // Absent: the stack's precision (an empty field, nothing written).
  EXPECT_EQ(parse_plan_yaml(plan_to_yaml(sample_plan()), "plan.yaml").strategy.precision, "");
  EXPECT_EQ(plan_to_yaml(sample_plan()).find("precision"), std::string::npos);
  // JSON: in the strategy and at the top level.
  auto j = strata::parse_json(plan_to_json(p));
  EXPECT_EQ(j["precision"], "fp8");
  EXPECT_EQ(j["strategy"]["precision"], "fp8");
  // A hand edit to an unknown precision names the key.
  std::string bad = y;
  bad.replace(bad.find("precision: fp8"), 14, "precision: fp4");
  EXPECT_NE(error_of(bad).find("precision"), std::string::npos) << error_of(bad);
}
