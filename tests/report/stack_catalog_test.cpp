#include "report/stack_catalog.h"

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

strata::costmodel::SoftwareStack example_stack() {
  strata::costmodel::SoftwareStack s;
  s.name = "example-stack";
  s.description = "a stack for this test";
  s.framework = "Megatron-LM";
  s.version = "0.1";
  s.overlap_grad_reduce = true;
  s.sources["overlap"] = "the framework's defaults";
  return s;
}

}  // namespace

TEST(StackCatalog, TableMarksTheGpuDefault) {
  const auto s = example_stack();
  const std::string marked = strata::report::format_stacks_table({s}, s.name);
  EXPECT_NE(marked.find("example-stack"), std::string::npos);
  EXPECT_NE(marked.find("(default on GPUs)"), std::string::npos);
  EXPECT_EQ(strata::report::format_stacks_table({s}, "another").find("(default on GPUs)"), std::string::npos);
}

TEST(StackCatalog, JsonHoldsEverySettingAndTheSources) {
  const auto j = nlohmann::json::parse(strata::report::format_stack_json(example_stack()));
  EXPECT_EQ(j["name"], "example-stack");
  EXPECT_EQ(j["settings"]["overlap.grad_reduce"], "true");
  EXPECT_EQ(j["sources"]["overlap"], "the framework's defaults");
  EXPECT_EQ(nlohmann::json::parse(strata::report::format_stacks_json({example_stack()})).size(), 1u);
}

TEST(StackCatalog, TextTakesASectionsSourceForItsDottedSettings) {
  const std::string text = strata::report::format_stack_text(example_stack());
  EXPECT_NE(text.find("# stack example-stack: a stack for this test"), std::string::npos);
  const auto line = text.substr(text.find("overlap.grad_reduce"));
  EXPECT_NE(line.substr(0, line.find('\n')).find("the framework's defaults"), std::string::npos);
  const auto attention = text.substr(text.find("attention.kernel"));
  EXPECT_NE(attention.substr(0, attention.find('\n')).find("(no source given)"), std::string::npos);
}
