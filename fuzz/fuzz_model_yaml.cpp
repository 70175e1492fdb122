// libFuzzer target: the strata model YAML parser (models::parse_model_yaml).
#include "fuzz/fuzz_target.h"
#include "models/model_spec.h"

STRATA_FUZZ_ROUND_TRIP(strata::models::parse_model_yaml, strata::models::to_yaml)
