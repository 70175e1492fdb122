// The schemas against strata's readers. For each input kind, a valid file (its JSON
// equivalent, which is also YAML) is accepted by both the schema and the reader behind a
// real `strata` command; the same file with an unknown key added at each object the reader
// checks is refused by both, and the keys the schema allows there are exactly the keys
// the reader's error lists as allowed.
#include <gtest/gtest.h>

#include <unistd.h>

#include "tests/integration/cli_run.h"
#include "tests/schemas/schema_support.h"

namespace strata::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUnknown = "zz_not_a_key";

struct ReaderCase {
  std::string schema;                   // schemas/<schema>
  nlohmann::json doc;                   // a valid document
  std::vector<std::string> command;     // strata arguments; "FILE" is replaced by the file
  std::vector<std::string> pointers;    // objects whose keys the reader checks
};

fs::path scratch_file(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("strata_schema_readers_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d / name;
}

RunResult run_on(const ReaderCase& c, const nlohmann::json& doc, const std::string& name) {
  const fs::path file = scratch_file(name);
  std::ofstream(file) << doc.dump(2) << "\n";  // JSON is YAML
  std::vector<std::string> args = c.command;
  for (auto& a : args)
    if (a == "FILE") a = file.string();
  RunResult r = run_strata(args);
  fs::remove(file);
  return r;
}

void check_reader_agrees(const ReaderCase& c, const std::string& file_name) {
  const JsonSchema schema = load_schema(c.schema);
  const auto base = schema.validate(c.doc);
  ASSERT_TRUE(base.empty()) << violations_text(base);
  const RunResult ok = run_on(c, c.doc, file_name);
  ASSERT_EQ(ok.exit_code, 0) << "the reader refuses the valid document: " << ok.err;

  for (const auto& ptr : c.pointers) {
    SCOPED_TRACE("unknown key under " + ptr);
    nlohmann::json doc = c.doc;
    const nlohmann::json::json_pointer p(ptr);
    ASSERT_TRUE(doc.contains(p) && doc.at(p).is_object()) << ptr << " is not an object of the document";
    doc.at(p)[kUnknown] = 1;

    const auto v = schema.validate(doc);
    ASSERT_EQ(v.size(), 1u) << violations_text(v);
    EXPECT_EQ(v[0].path, json_pointer_append(ptr, kUnknown));
    const std::set<std::string> schema_keys = listed_keys(v[0].message);
    EXPECT_FALSE(schema_keys.empty()) << v[0].message;

    const RunResult r = run_on(c, doc, file_name);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    ASSERT_EQ(r.error_lines().size(), 1u) << r.err;
    const std::string line = r.error_lines()[0];
    EXPECT_NE(line.find(kUnknown), std::string::npos) << line;
    const std::set<std::string> reader_keys = listed_keys(line);
    EXPECT_FALSE(reader_keys.empty()) << "the reader's error lists no keys: " << line;
    EXPECT_EQ(schema_keys, reader_keys) << "schema: " << v[0].message << "\nreader: " << line;
  }
}

nlohmann::json file_json(const std::string& rel) { return load_yaml_as_json(source_path(rel)); }

TEST(SchemaReaders, ModelFileKeysMatchTheModelReader) {
  check_reader_agrees({"model.schema.json", file_json("models/catalog/deepseek-v3.yaml"),
                       {"models", "show", "FILE"}, {"", "/mla", "/moe"}},
                      "model.yaml");
}

TEST(SchemaReaders, ClusterFileKeysMatchTheClusterReader) {
  check_reader_agrees({"cluster.schema.json", file_json("costmodel/hardware/clusters/dgx-h100.yaml"),
                       {"clusters", "show", "FILE"}, {"", "/intra_node"}},
                      "cluster.yaml");
}

TEST(SchemaReaders, MeasuredProfileKeysMatchTheProfileReader) {
  check_reader_agrees({"device-profile.schema.json", file_json("costmodel/hardware/profiles/local-cpu-measured.yaml"),
                       {"simulate", "--model", "tiny", "--cluster", "local-cpu", "--profile", "FILE"},
                       {"", "/peak_tflops", "/efficiency", "/gemm_table/rows/0",
                        "/collective_table/rows/0", "/op_table", "/op_table/rows/0", "/block_table/rows/0"}},
                      "profile.yaml");
}

TEST(SchemaReaders, FittedProfileTrainingLossKeysMatchTheProfileReader) {
  check_reader_agrees({"device-profile.schema.json", file_json("costmodel/hardware/profiles/h100-sxm-80gb-fitted.yaml"),
                       {"simulate", "--model", "tiny", "--cluster", "dgx-h100", "--profile", "FILE"},
                       {"/training_losses/parameters", "/training_losses/parameters/gemm_sustain"}},
                      "fitted.yaml");
}

TEST(SchemaReaders, SoftwareStackKeysMatchTheStackReader) {
  check_reader_agrees({"software-stack.schema.json", file_json("costmodel/stacks/megatron-2021.yaml"),
                       {"stacks", "show", "FILE"},
                       {"", "/attention", "/fusions", "/overlap", "/supports", "/grad_buffer", "/sources/precision"}},
                      "stack.yaml");
}

TEST(SchemaReaders, RunsFileKeysMatchTheRunsReader) {
  // The first row of a published runs file, on its own (validate --runs predicts every row).
  nlohmann::json all = file_json("bench/validation/runs/h100.yaml");
  nlohmann::json doc = {{"source", "schema test"}, {"defaults", all["defaults"]}, {"runs", {all["runs"][0]}}};
  ASSERT_TRUE(doc["runs"][0]["model"].is_object());
  check_reader_agrees({"runs.schema.json", doc, {"validate", "--runs", "FILE"},
                       {"", "/defaults", "/runs/0", "/runs/0/measured", "/runs/0/model", "/runs/0/strategy"}},
                      "runs.yaml");
}

TEST(SchemaReaders, StrategiesFileKeysMatchTheStrategiesReader) {
  check_reader_agrees({"strategies.schema.json", file_json("schemas/examples/strategies.yaml"),
                       {"compare", "--model", "tiny", "--cluster", "local-cpu", "--gpus", "2", "--strategies", "FILE",
                        "--format", "json"},
                       {"", "/strategies/0"}},
                      "strategies.yaml");
}

TEST(SchemaReaders, PlanFileKeysMatchThePlanReader) {
  const fs::path out = scratch_file("written-plan.yaml");
  const RunResult r = run_strata({"plan", "--model", "tiny", "--cluster", "local-cpu", "--gpus", "2", "--tp", "1",
                                  "--pp", "2", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = load_yaml_as_json(out.string());
  fs::remove(out);
  // `models show PLAN.yaml` reads the whole plan (planner::load_plan).
  check_reader_agrees({"plan.schema.json", doc, {"models", "show", "FILE"},
                       {"", "/model", "/strategy", "/rank_grid", "/prediction", "/prediction/breakdown_s"}},
                      "plan.yaml");
}

}  // namespace
}  // namespace strata::testing
