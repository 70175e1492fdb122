// Every data file in the repository validates against its schema (schemas/), read as the
// JSON equivalent of its YAML; and the schemas themselves use only the keywords the
// validator checks (JsonSchema refuses any other when constructed).
#include <gtest/gtest.h>

#include "tests/schemas/schema_support.h"

namespace strata::testing {
namespace {

void expect_all_valid(const std::string& schema_name, const std::vector<std::string>& files) {
  const JsonSchema schema = load_schema(schema_name);
  ASSERT_FALSE(files.empty()) << "no files for " << schema_name;
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    const auto v = schema.validate(load_yaml_as_json(f));
    EXPECT_TRUE(v.empty()) << f << " against " << schema_name << ":\n" << violations_text(v);
  }
}

TEST(SchemaFiles, EverySchemaLoadsWithItsReferences) {
  for (const auto& f : files_in("schemas", ".schema.json")) {
    SCOPED_TRACE(f);
    const std::string name = std::filesystem::path(f).filename().string();
    nlohmann::json root;
    ASSERT_NO_THROW(root = read_json_file(f));
    EXPECT_EQ(root.value("$schema", ""), "https://json-schema.org/draft/2020-12/schema");
    EXPECT_TRUE(root.value("$id", "").ends_with("/" + name)) << "$id must end with the file name";
    EXPECT_FALSE(root.value("title", "").empty());
    EXPECT_FALSE(root.value("description", "").empty());
    EXPECT_NO_THROW((void)load_schema(name));
  }
}

TEST(SchemaFiles, CatalogModelsValidate) { expect_all_valid("model.schema.json", files_in("models/catalog")); }

TEST(SchemaFiles, CatalogClustersValidate) {
  expect_all_valid("cluster.schema.json", files_in("costmodel/hardware/clusters"));
}

// The clusters, devices and profiles of published runs that no catalog holds (bench/validation).
TEST(SchemaFiles, ValidationClustersDevicesAndProfilesValidate) {
  expect_all_valid("cluster.schema.json", files_in("bench/validation/clusters"));
  auto devices = files_in("bench/validation/devices");
  for (const auto& f : files_in("bench/validation/profiles")) devices.push_back(f);
  expect_all_valid("device-profile.schema.json", devices);
}

TEST(SchemaFiles, DeviceDatasheetsAndProfilesValidate) {
  auto files = files_in("costmodel/hardware");
  for (const auto& f : files_in("costmodel/hardware/profiles")) files.push_back(f);
  expect_all_valid("device-profile.schema.json", files);
}

TEST(SchemaFiles, SoftwareStacksValidate) {
  std::vector<std::string> stacks;
  for (const auto& f : files_in("costmodel/stacks"))
    if (!f.ends_with("/residuals.yaml")) stacks.push_back(f);
  expect_all_valid("software-stack.schema.json", stacks);
}

TEST(SchemaFiles, MeasuredRunsFilesValidate) { expect_all_valid("runs.schema.json", files_in("bench/validation/runs")); }

TEST(SchemaFiles, ExampleStrategiesFileValidates) {
  expect_all_valid("strategies.schema.json", {source_path("schemas/examples/strategies.yaml")});
}

}  // namespace
}  // namespace strata::testing
