// JsonSchema: every keyword it checks rejects a violating document and names the JSON
// pointer of the offending value; unsupported keywords and dangling $refs are refused.
#include "common/json_schema.h"

#include <gtest/gtest.h>

#include "common/errors.h"

namespace strata {
namespace {

using nlohmann::json;

// The single violation of `doc`, as "path: message" (fails if there is not exactly one).
std::string only_violation(const JsonSchema& s, const json& doc) {
  const auto v = s.validate(doc);
  EXPECT_EQ(v.size(), 1u) << doc.dump();
  return v.empty() ? "" : v[0].path + ": " + v[0].message;
}

const json kSchema = json::parse(R"({
  "$id": "https://strata.invalid/schemas/test.schema.json",
  "type": "object",
  "additionalProperties": false,
  "required": ["name", "tp"],
  "properties": {
    "name": {"type": "string"},
    "tp": {"type": "integer", "minimum": 1, "maximum": 8},
    "mfu": {"type": ["number", "null"], "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "kind": {"enum": ["gelu", "swiglu"]},
    "version": {"const": 1},
    "rows": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"$ref": "#/$defs/row"}},
    "device": {"oneOf": [{"type": "string"}, {"$ref": "#/$defs/row"}]},
    "size": {"anyOf": [{"type": "integer"}, {"enum": ["auto"]}]},
    "free": {"type": "object", "additionalProperties": {"type": "boolean"}}
  },
  "$defs": {
    "row": {"type": "object", "additionalProperties": false, "required": ["m"],
            "properties": {"m": {"type": "integer"}, "a/b": {"type": "string"}}}
  }
})");

TEST(JsonSchema, AcceptsAValidDocument) {
  const JsonSchema s(kSchema);
  const json doc = json::parse(R"({"name": "x", "tp": 2, "mfu": 0.5, "kind": "gelu", "version": 1,
    "rows": [{"m": 3}], "device": {"m": 1}, "size": "auto", "free": {"a": true}})");
  EXPECT_TRUE(s.validate(doc).empty());
  EXPECT_TRUE(s.validate(json::parse(R"({"name": "x", "tp": 2.0, "mfu": null, "device": "h100", "size": 7})")).empty())
      << "2.0 is an integer; null is allowed by a type list";
}

TEST(JsonSchema, RejectsEachKeywordWithItsPath) {
  const JsonSchema s(kSchema);
  const json base = {{"name", "x"}, {"tp", 2}};
  auto with = [&](const char* key, json value) {
    json d = base;
    d[key] = std::move(value);
    return d;
  };
  EXPECT_EQ(only_violation(s, json::array()), ": expected object, got array []");
  EXPECT_EQ(only_violation(s, json{{"name", "x"}}), "/tp: missing required key");
  EXPECT_EQ(only_violation(s, with("name", 3)), "/name: expected string, got integer 3");
  EXPECT_EQ(only_violation(s, with("tp", 2.5)), "/tp: expected integer, got number 2.5");
  EXPECT_EQ(only_violation(s, with("tp", 0)), "/tp: 0 is below the minimum 1");
  EXPECT_EQ(only_violation(s, with("tp", 9)), "/tp: 9 is above the maximum 8");
  EXPECT_EQ(only_violation(s, with("mfu", 0)), "/mfu: 0 must be > 0");
  EXPECT_EQ(only_violation(s, with("mfu", 1.0)), "/mfu: 1.0 must be < 1");
  const auto nan = s.validate(with("mfu", std::nan("")));  // fails both bounds
  ASSERT_EQ(nan.size(), 2u);
  EXPECT_EQ(nan[0].path, "/mfu") << "NaN never passes a numeric bound";
  EXPECT_EQ(only_violation(s, with("kind", "relu")), "/kind: \"relu\" is not one of: gelu, swiglu");
  EXPECT_EQ(only_violation(s, with("version", 2)), "/version: 2 must be 1");
  EXPECT_EQ(only_violation(s, with("zz", 1)),
            "/zz: unknown key (allowed: device, free, kind, mfu, name, rows, size, tp, version)");
  EXPECT_EQ(only_violation(s, with("rows", json::array())), "/rows: has 0 items, expected at least 1");
  EXPECT_EQ(only_violation(s, with("rows", json::parse(R"([{"m": 1}, {"m": 2}, {"m": 3}])"))),
            "/rows: has 3 items, expected at most 2");
  EXPECT_EQ(only_violation(s, with("rows", json::parse(R"([{"m": 1}, {"m": "x"}])"))),
            "/rows/1/m: expected integer, got string \"x\"");
  EXPECT_EQ(only_violation(s, with("rows", json::parse(R"([{"m": 1, "a/b": 2}])"))),
            "/rows/0/a~1b: expected string, got integer 2") << "pointer escaping";
  EXPECT_EQ(only_violation(s, with("rows", json::parse(R"([{}])"))), "/rows/0/m: missing required key");
  EXPECT_EQ(only_violation(s, with("device", 5)),
            "/device: matches none of the oneOf alternatives (first: /device: expected string, got integer 5)");
  EXPECT_EQ(only_violation(s, with("size", "big")),
            "/size: matches none of the anyOf alternatives (first: /size: expected integer, got string \"big\")");
  EXPECT_EQ(only_violation(s, with("free", json{{"a", 1}})), "/free/a: expected boolean, got integer 1");
  EXPECT_EQ(only_violation(s, with("device", json{{"m", 1}, {"zz", 1}})), "/device/zz: unknown key (allowed: a/b, m)")
      << "a oneOf whose object alternative fails inside reports that alternative's violation";
}

TEST(JsonSchema, OneOfRejectsAValueMatchingTwoAlternatives) {
  const JsonSchema s(json::parse(R"({"oneOf": [{"type": "integer"}, {"minimum": 0}]})"));
  EXPECT_EQ(only_violation(s, 3), ": matches 2 of the oneOf alternatives, expected exactly one");
  EXPECT_TRUE(s.validate(-3).empty());
  EXPECT_TRUE(s.validate(0.5).empty());
}

TEST(JsonSchema, FollowsReferencesIntoAnotherSchemaByFileName) {
  const json other = json::parse(R"({"$id": "https://strata.invalid/schemas/other.schema.json",
    "$defs": {"dtype": {"enum": ["bf16", "fp32"]}}})");
  const JsonSchema s(json::parse(R"({"properties": {"d": {"$ref": "other.schema.json#/$defs/dtype"}}})"), {other});
  EXPECT_TRUE(s.validate(json{{"d", "bf16"}}).empty());
  EXPECT_EQ(only_violation(s, json{{"d", "fp8"}}), "/d: \"fp8\" is not one of: bf16, fp32");
}

TEST(JsonSchema, RefusesUnsupportedKeywordsAndDanglingReferences) {
  EXPECT_THROW(JsonSchema(json::parse(R"({"properties": {"a": {"pattern": "^x"}}})")), InputError);
  EXPECT_THROW(JsonSchema(json::parse(R"({"properties": {"a": {"$ref": "#/$defs/missing"}}})")), InputError);
  EXPECT_THROW(JsonSchema(json::parse(R"({"$ref": "absent.schema.json#/$defs/x"})")), InputError);
  EXPECT_THROW(JsonSchema(json::parse(R"({"type": "float"})")), InputError);
  try {
    JsonSchema(json::parse(R"({"$id": "x.schema.json", "properties": {"a": {"unevaluatedProperties": false}}})"));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("#/properties/a"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unevaluatedProperties"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace strata
