#include "kernels/profiler/build_info.h"

#ifndef STRATA_VERSION_STRING
#define STRATA_VERSION_STRING "unknown"
#endif
#ifndef STRATA_GIT_COMMIT
#define STRATA_GIT_COMMIT "unknown"
#endif

namespace strata::kernels::profiler {

std::string strata_version() { return STRATA_VERSION_STRING; }
std::string build_commit() { return STRATA_GIT_COMMIT; }

}  // namespace strata::kernels::profiler
