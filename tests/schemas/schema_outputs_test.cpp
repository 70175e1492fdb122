// The real `strata` binary's outputs validate against their schemas: plan --format json,
// plan --out (YAML), simulate --format json, compare --format json, validate --format json
// and the metrics lines of the `strata train --metrics` runs validate launches.
#include <gtest/gtest.h>

#include <unistd.h>

#include "tests/integration/cli_run.h"
#include "tests/schemas/schema_support.h"

namespace strata::testing {
namespace {

namespace fs = std::filesystem;

fs::path scratch_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("strata_schemas_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

nlohmann::json stdout_json(const RunResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

void expect_valid(const std::string& schema_name, const nlohmann::json& doc) {
  const auto v = load_schema(schema_name).validate(doc);
  EXPECT_TRUE(v.empty()) << schema_name << ":\n" << violations_text(v) << "document:\n" << doc.dump(2).substr(0, 4000);
}

TEST(SchemaOutputs, PlanJsonAndPlanFileValidate) {
  const fs::path dir = scratch_dir("plan");
  const std::string out = (dir / "plan.yaml").string();
  const RunResult r = run_strata({"plan", "--model", "tiny", "--cluster", "local-cpu", "--gpus", "2", "--top", "3",
                                  "--format", "json", "--out", out});
  const nlohmann::json j = stdout_json(r);
  ASSERT_GE(j["plans"].size(), 1u);
  expect_valid("plan-output.schema.json", j);
  ASSERT_TRUE(fs::exists(out)) << r.err;
  expect_valid("plan.schema.json", load_yaml_as_json(out));
  fs::remove_all(dir);
}

TEST(SchemaOutputs, PlanJsonWithAnImportedJobAndTimeToTrainValidates) {
  const fs::path dir = scratch_dir("plan_job");
  const std::string args = (dir / "job.sh").string();
  std::ofstream(args) << "torchrun pretrain_gpt.py --num-layers 4 --hidden-size 64 --num-attention-heads 4 "
                         "--seq-length 32 --max-position-embeddings 32 --vocab-size 256 "
                         "--tensor-model-parallel-size 2 --micro-batch-size 1 --global-batch-size 8\n";
  const RunResult r = run_strata({"plan", "--cluster", "local-cpu", "--gpus", "2", "--top", "1", "--from", "megatron", args,
                                  "--train-tokens", "1e6", "--gpu-hour-price", "2", "--format", "json"});
  if (r.exit_code != 0) GTEST_SKIP() << "plan --from refused the job: " << r.err;
  const nlohmann::json j = stdout_json(r);
  EXPECT_TRUE(j.contains("job"));
  EXPECT_TRUE(j["plans"][0].contains("time_to_train"));
  expect_valid("plan-output.schema.json", j);
  fs::remove_all(dir);
}

TEST(SchemaOutputs, SimulateJsonValidates) {
  const nlohmann::json cpu =
      stdout_json(run_strata({"simulate", "--model", "tiny", "--cluster", "local-cpu", "--tp", "2", "--format", "json"}));
  expect_valid("simulate-output.schema.json", cpu);
  // A validated stack on a GPU cluster: an uncertainty band, and time to train with a cost.
  const nlohmann::json gpu = stdout_json(run_strata({"simulate", "--model", "gpt3-175b", "--cluster", "dgx-a100",
                                                     "--tp", "8", "--pp", "16", "--gpus", "1024", "--train-tokens",
                                                     "300B", "--gpu-hour-price", "2", "--format", "json"}));
  EXPECT_TRUE(gpu["prediction"]["uncertainty"].is_object());
  EXPECT_TRUE(gpu["time_to_train"]["cost_usd"].is_object());
  expect_valid("simulate-output.schema.json", gpu);
}

TEST(SchemaOutputs, CompareJsonValidates) {
  const nlohmann::json top = stdout_json(
      run_strata({"compare", "--model", "tiny", "--cluster", "local-cpu", "--gpus", "2", "--top", "2", "--format", "json"}));
  expect_valid("compare-output.schema.json", top);
  const nlohmann::json listed = stdout_json(run_strata({"compare", "--model", "tiny", "--cluster", "local-cpu", "--gpus",
                                                        "2", "--strategies", source_path("schemas/examples/strategies.yaml"),
                                                        "--format", "json"}));
  EXPECT_EQ(listed["strategies"].size(), 4u);
  expect_valid("compare-output.schema.json", listed);
}

// validate runs one plan under mpirun (about 2 s): its JSON, the metrics lines of the
// `strata train --metrics` run it launched, and compare --measured over its output.
TEST(SchemaOutputs, ValidateJsonMetricsLinesAndCompareMeasuredValidate) {
#ifdef STRATA_NO_MPI_TESTS
  GTEST_SKIP() << "MPI tests are not built in this configuration";
#endif
  const fs::path dir = scratch_dir("validate");
  const RunResult r = run_strata({"validate", "--cluster", "local-cpu", "--model", "tiny", "--np", "1", "--steps", "2",
                                  "--warmup", "0", "--top", "1", "--global-batch", "4", "--format", "json",
                                  "--keep-dir", (dir / "keep").string()},
                                 120, "", mpi_child_env());
  if (r.exit_code != 0 && r.err.find("mpirun") != std::string::npos) GTEST_SKIP() << "no mpirun: " << r.err;
  const nlohmann::json v = stdout_json(r);
  ASSERT_EQ(v["summary"]["plans_ok"], 1) << r.out;
  expect_valid("validate-output.schema.json", v);

  int lines = 0;
  for (const auto& e : fs::directory_iterator(dir / "keep")) {
    if (e.path().extension() != ".jsonl") continue;
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      ++lines;
      expect_valid("metrics-line.schema.json", nlohmann::json::parse(line));
    }
  }
  EXPECT_EQ(lines, 2) << "one metrics line per step";

  const std::string measured = (dir / "v.json").string();
  std::ofstream(measured) << r.out;
  const nlohmann::json c = stdout_json(run_strata({"compare", "--model", "tiny", "--cluster", "local-cpu", "--gpus",
                                                   "1", "--measured", measured, "--format", "json"}));
  EXPECT_TRUE(c["strategies"][0]["measured"].is_object());
  expect_valid("compare-output.schema.json", c);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strata::testing
