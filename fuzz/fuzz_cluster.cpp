// libFuzzer target: the cluster spec parser (costmodel::parse_cluster_spec).
#include "costmodel/cluster_spec.h"
#include "fuzz/fuzz_target.h"

STRATA_FUZZ_ROUND_TRIP(strata::costmodel::parse_cluster_spec, strata::costmodel::to_yaml)
