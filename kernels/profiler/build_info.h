// The strata version and the git commit the profiler was built from (recorded in
// calibration output and profile provenance), and how it was built (`strata --version`:
// what a bug report needs to say which binary it is about).
#pragma once
#include <string>

namespace strata::kernels::profiler {

std::string strata_version();  // "0.1.0"
// `git describe --always --dirty` of the checkout when the binary was last built (stamped on
// every build by cmake/WriteBuildCommit.cmake), or "unknown" outside a git checkout.
std::string build_commit();
std::string build_type();      // CMake's configuration: "Release", "Debug", ...; "unknown" if none
bool cuda_built();             // the CUDA backend (cuBLASLt, NCCL) is compiled in

}  // namespace strata::kernels::profiler
