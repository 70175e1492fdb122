// The strata version and the git commit the profiler was built from (recorded in
// calibration output and profile provenance).
#pragma once
#include <string>

namespace strata::kernels::profiler {

std::string strata_version();  // "0.1.0"
std::string build_commit();    // `git describe --always --dirty` at configure time, or "unknown"

}  // namespace strata::kernels::profiler
