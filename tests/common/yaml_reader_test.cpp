#include "common/yaml_reader.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/errors.h"
#include "common/json_text.h"
#include "tests/input_error_of.h"

using strata::InputError;
using strata::testing::input_error_of;
using strata::YamlReader;

namespace {

YamlReader reader(const std::string& text) { return YamlReader(strata::parse_yaml(text, "t.yaml"), "t.yaml"); }

}  // namespace

TEST(YamlReader, ReadsTypedValues) {
  auto r = reader("a: 3\nb: 2.5\nc: true\nd: hello\ne: 1e3\n");
  EXPECT_EQ(r.get_int("a"), 3);
  EXPECT_DOUBLE_EQ(r.get_double("b"), 2.5);
  EXPECT_TRUE(r.get_bool("c"));
  EXPECT_EQ(r.get_string("d"), "hello");
  EXPECT_EQ(r.get_int("e"), 1000);
  EXPECT_EQ(r.get_int("missing", 7), 7);
}

TEST(YamlReader, MalformedYamlNamesFileAndLine) {
  std::string m = input_error_of([] { strata::parse_yaml("a: [1, 2\nb: 3\n", "bad.yaml"); });
  EXPECT_NE(m.find("bad.yaml:"), std::string::npos) << m;
  EXPECT_NE(m.find("malformed YAML"), std::string::npos) << m;
}

// A stray byte that is not UTF-8 (the fuzzer's cluster file with 0xff in a source ref) is
// refused with its line; UTF-8 text, multi-byte characters included, is read.
TEST(YamlReader, BytesThatAreNotUtf8AreRefusedWithTheirLine) {
  const std::string e = strata::testing::input_error_of(
      [] { strata::parse_yaml("name: a\nref: x\xff\xffy\n", "c.yaml"); });
  EXPECT_NE(e.find("c.yaml:2: not UTF-8"), std::string::npos) << e;
  for (const char* bad : {"a: \xc3\n", "a: \xe2\x82\n", "a: \xc0\xaf\n"})
    EXPECT_NE(strata::testing::input_error_of([&] { strata::parse_yaml(bad, "c.yaml"); }).find("not UTF-8"),
              std::string::npos) << bad;
  EXPECT_EQ(strata::parse_yaml("unit: \"\xc2\xb5s \xe2\x82\xac \xf0\x9f\x99\x82\"\n", "c.yaml")["unit"].as<std::string>(),
            "\xc2\xb5s \xe2\x82\xac \xf0\x9f\x99\x82");
}

TEST(YamlReader, EmptyDocumentIsAnError) {
  EXPECT_THROW(strata::parse_yaml("", "e.yaml"), InputError);
  EXPECT_THROW(strata::parse_yaml("# only a comment\n", "e.yaml"), InputError);
}

TEST(YamlReader, UnknownKeyIsRejectedWithAllowedList) {
  auto r = reader("layers: 2\nhiden: 3\n");
  std::string m = input_error_of([&] { r.expect_keys({"layers", "hidden"}); });
  EXPECT_NE(m.find("hiden"), std::string::npos) << m;
  EXPECT_NE(m.find("allowed: layers, hidden"), std::string::npos) << m;
}

TEST(YamlReader, WrongTypesAndRangesNameTheKey) {
  auto r = reader("a: abc\nb: -4\nc: [1]\nd: maybe\ne: 99999999999999999999999\n");
  EXPECT_NE(input_error_of([&] { r.get_int("a"); }).find("a: expected an integer"), std::string::npos);
  EXPECT_NE(input_error_of([&] { r.get_int_in("b", 1, 10); }).find("out of range"), std::string::npos);
  EXPECT_NE(input_error_of([&] { r.get_int("c"); }).find("c: expected an integer"), std::string::npos);
  EXPECT_NE(input_error_of([&] { r.get_bool("d"); }).find("expected true or false"), std::string::npos);
  EXPECT_NE(input_error_of([&] { r.get_int("e"); }).find("out of range"), std::string::npos);
  EXPECT_NE(input_error_of([&] { r.get_string("zz"); }).find("zz: missing required key"),
            std::string::npos);
}

TEST(YamlReader, EnumListsChoices) {
  auto r = reader("act: relu\n");
  std::string m = input_error_of([&] { r.get_enum("act", {"gelu", "swiglu"}); });
  EXPECT_NE(m.find("'relu' is not one of: gelu, swiglu"), std::string::npos) << m;
}

TEST(YamlReader, NestedPathsAppearInErrors) {
  auto r = reader("outer:\n  inner:\n    x: nope\n");
  std::string m = input_error_of([&] { r.child("outer").child("inner").get_double("x"); });
  EXPECT_NE(m.find("outer.inner.x"), std::string::npos) << m;
  EXPECT_NE(m.find("t.yaml:3"), std::string::npos) << m;
}

// Duplicate keys: refused in YAML (any depth) and JSON (any depth); the same key in two
// different mappings / objects is fine.
struct DuplicateCase {
  const char* name;
  bool json;
  const char* text;
  const char* mentions;  // empty: accepted
};

class DuplicateKeyTest : public ::testing::TestWithParam<DuplicateCase> {};

TEST_P(DuplicateKeyTest, RefusedByName) {
  const DuplicateCase& c = GetParam();
  std::string error;
  try {
    if (c.json) strata::parse_json(c.text);
    else strata::parse_yaml(c.text, "d.yaml");
  } catch (const InputError& e) {
    error = e.what();
  } catch (const nlohmann::json::exception& e) {
    error = e.what();
  }
  if (std::string(c.mentions).empty()) {
    EXPECT_EQ(error, "") << "should be accepted";
  } else {
    EXPECT_NE(error.find(c.mentions), std::string::npos) << error;
    EXPECT_NE(error.find("duplicate key"), std::string::npos) << error;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Common, DuplicateKeyTest,
    ::testing::ValuesIn(std::vector<DuplicateCase>{
        {"yaml_top_level", false, "layers: 2\nhidden: 64\nlayers: 4\n", "'layers' (first at line 1)"},
        {"yaml_nested", false, "a:\n  b: 1\n  c: 2\n  b: 3\n", "'b'"},
        {"yaml_in_list", false, "rows:\n  - {m: 1, n: 2, m: 3}\n", "'m'"},
        {"yaml_flow_map", false, "{x: 1, x: 1}\n", "'x'"},
        {"yaml_same_key_in_two_maps", false, "a: {k: 1}\nb: {k: 2}\n", ""},
        {"yaml_list_repeats_values", false, "a: [1, 1, 1]\n", ""},
        {"json_top_level", true, R"({"hidden_size": 64, "hidden_size": 128})", "\"hidden_size\""},
        {"json_nested", true, R"({"a": {"b": 1, "b": 2}})", "\"b\""},
        {"json_in_array", true, R"({"plans": [{"x": 1}, {"x": 1, "x": 2}]})", "\"x\""},
        {"json_same_key_in_two_objects", true, R"({"a": {"k": 1}, "b": {"k": 1}, "k": 0})", ""},
    }),
    [](const auto& info) { return std::string(info.param.name); });

// Anchors and aliases: a map that names itself (a cycle) or an anchor repeated into a very wide
// tree is walked once per collection, so both are read (before, the walk expanded aliases and
// refused both at its 4 million node bound, past libFuzzer's 11 s under ASan on the cycle); a
// duplicate key inside an aliased map is still found.
TEST(YamlReader, AliasesAreWalkedOncePerCollection) {
  EXPECT_NO_THROW(strata::parse_yaml("base: &b\n  x: 1\n  self: *b\nname: x\n", "cycle.yaml"));
  std::string wide = "l0: &l0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n";
  for (int i = 1; i < 9; ++i)
    wide += fmt::format("l{0}: &l{0} [*l{1}, *l{1}, *l{1}, *l{1}, *l{1}, *l{1}, *l{1}, *l{1}, *l{1}, *l{1}]\n", i, i - 1);
  EXPECT_NO_THROW(strata::parse_yaml(wide, "wide.yaml"));  // 10^9 leaves expanded
  try {
    strata::parse_yaml("a: &a {k: 1, k: 2}\nb: *a\n", "dup.yaml");
    ADD_FAILURE() << "a duplicate key behind an anchor was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("duplicate key 'k'"), std::string::npos) << e.what();
  }
}

// JSON integers are range-checked before narrowing.
TEST(JsonInt, RangeCheckedBeforeNarrowing) {
  auto j = strata::parse_json(R"({"small": 7, "big": 4294967297, "neg": -1, "frac": 1.5, "str": "3",
                                  "huge": 18446744073709551615})");
  EXPECT_EQ(strata::json_int<int>(j["small"], "small"), 7);
  EXPECT_EQ(strata::json_int<std::int64_t>(j["big"], "big"), 4294967297LL);
  EXPECT_THROW(strata::json_int<int>(j["big"], "big"), InputError);
  EXPECT_THROW(strata::json_int<std::uint32_t>(j["neg"], "neg"), InputError);
  EXPECT_EQ(strata::json_int<int>(j["neg"], "neg"), -1);
  EXPECT_THROW(strata::json_int<int>(j["frac"], "frac"), InputError);
  EXPECT_THROW(strata::json_int<int>(j["str"], "str"), InputError);
  EXPECT_THROW(strata::json_int<std::int64_t>(j["huge"], "huge"), InputError);
  EXPECT_EQ(strata::json_int<std::uint64_t>(j["huge"], "huge"), 18446744073709551615ULL);
  std::string m = input_error_of([&] { strata::json_int<int>(j["big"], "plans[0].dp"); });
  EXPECT_NE(m.find("plans[0].dp"), std::string::npos) << m;
  EXPECT_NE(m.find("out of range"), std::string::npos) << m;
}
