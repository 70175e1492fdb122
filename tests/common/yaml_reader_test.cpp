#include "common/yaml_reader.h"

#include <gtest/gtest.h>

#include "common/errors.h"

using strata::InputError;
using strata::YamlReader;

namespace {

std::string message_of(auto&& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

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
  std::string m = message_of([] { strata::parse_yaml("a: [1, 2\nb: 3\n", "bad.yaml"); });
  EXPECT_NE(m.find("bad.yaml:"), std::string::npos) << m;
  EXPECT_NE(m.find("malformed YAML"), std::string::npos) << m;
}

TEST(YamlReader, EmptyDocumentIsAnError) {
  EXPECT_THROW(strata::parse_yaml("", "e.yaml"), InputError);
  EXPECT_THROW(strata::parse_yaml("# only a comment\n", "e.yaml"), InputError);
}

TEST(YamlReader, UnknownKeyIsRejectedWithAllowedList) {
  auto r = reader("layers: 2\nhiden: 3\n");
  std::string m = message_of([&] { r.expect_keys({"layers", "hidden"}); });
  EXPECT_NE(m.find("hiden"), std::string::npos) << m;
  EXPECT_NE(m.find("allowed: layers, hidden"), std::string::npos) << m;
}

TEST(YamlReader, WrongTypesAndRangesNameTheKey) {
  auto r = reader("a: abc\nb: -4\nc: [1]\nd: maybe\ne: 99999999999999999999999\n");
  EXPECT_NE(message_of([&] { r.get_int("a"); }).find("a: expected an integer"), std::string::npos);
  EXPECT_NE(message_of([&] { r.get_int_in("b", 1, 10); }).find("out of range"), std::string::npos);
  EXPECT_NE(message_of([&] { r.get_int("c"); }).find("c: expected an integer"), std::string::npos);
  EXPECT_NE(message_of([&] { r.get_bool("d"); }).find("expected true or false"), std::string::npos);
  EXPECT_NE(message_of([&] { r.get_int("e"); }).find("out of range"), std::string::npos);
  EXPECT_NE(message_of([&] { r.get_string("zz"); }).find("zz: missing required key"),
            std::string::npos);
}

TEST(YamlReader, EnumListsChoices) {
  auto r = reader("act: relu\n");
  std::string m = message_of([&] { r.get_enum("act", {"gelu", "swiglu"}); });
  EXPECT_NE(m.find("'relu' is not one of: gelu, swiglu"), std::string::npos) << m;
}

TEST(YamlReader, NestedPathsAppearInErrors) {
  auto r = reader("outer:\n  inner:\n    x: nope\n");
  std::string m = message_of([&] { r.child("outer").child("inner").get_double("x"); });
  EXPECT_NE(m.find("outer.inner.x"), std::string::npos) << m;
  EXPECT_NE(m.find("t.yaml:3"), std::string::npos) << m;
}
