#include "kernels/profiler/build_info.h"

#ifndef STRATA_VERSION_STRING
#define STRATA_VERSION_STRING "unknown"
#endif
// STRATA_GIT_COMMIT, written at build time (cmake/WriteBuildCommit.cmake).
#include "strata_build_commit.h"
#ifndef STRATA_BUILD_TYPE
#define STRATA_BUILD_TYPE ""
#endif

namespace strata::kernels::profiler {

std::string strata_version() { return STRATA_VERSION_STRING; }
std::string build_commit() { return STRATA_GIT_COMMIT; }
std::string build_type() { return *STRATA_BUILD_TYPE ? STRATA_BUILD_TYPE : "unknown"; }

bool cuda_built() {
  // strata_kernels defines it for everything that links the CUDA backend (kernels/CMakeLists.txt).
#ifdef STRATA_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace strata::kernels::profiler
