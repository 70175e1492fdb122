// libFuzzer target: the device profile parser (costmodel::parse_device_profile).
#include "costmodel/device_profile.h"
#include "fuzz/fuzz_target.h"

STRATA_FUZZ_ROUND_TRIP(strata::costmodel::parse_device_profile, strata::costmodel::to_yaml)
