// libFuzzer target: the plan file parser (planner::parse_plan_yaml), which also checks
// the plan's consistency (strategy valid for the model, stage map covering each layer).
#include "fuzz/fuzz_target.h"
#include "planner/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return strata::fuzz::check_parser(
      data, size,
      [](const std::string& t, const std::string& s) {
        return strata::planner::parse_plan_yaml(t, s);
      },
      [](const strata::planner::Plan& p) { return strata::planner::plan_to_yaml(p); });
}
