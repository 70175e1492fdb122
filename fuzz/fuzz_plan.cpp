// libFuzzer target: the plan file parser (planner::parse_plan_yaml), which also checks
// the plan's consistency (strategy valid for the model, stage map covering each layer).
#include "fuzz/fuzz_target.h"
#include "planner/plan.h"

STRATA_FUZZ_ROUND_TRIP(strata::planner::parse_plan_yaml, strata::planner::plan_to_yaml)
