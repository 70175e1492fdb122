#include "kernels/cpu/blas_library.h"

#include <cstdlib>

#if defined(STRATA_HAVE_OPENBLAS) && STRATA_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace strata::kernels {

namespace {
bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}
}  // namespace

int configure_blas_threads(int ranks_on_node) {
#if defined(STRATA_HAVE_OPENBLAS) && STRATA_HAVE_OPENBLAS
  if (!env_set("OPENBLAS_NUM_THREADS") && !env_set("OMP_NUM_THREADS") && ranks_on_node > 1)
    openblas_set_num_threads(1);
#endif
  return blas_threads();
}

int blas_threads() {
#if defined(STRATA_HAVE_OPENBLAS) && STRATA_HAVE_OPENBLAS
  return openblas_get_num_threads();
#else
  return 1;
#endif
}

std::string blas_version() {
#if defined(STRATA_HAVE_OPENBLAS) && STRATA_HAVE_OPENBLAS
  std::string s = openblas_get_config();
  s += " (core ";
  s += openblas_get_corename();
  s += ")";
  return s;
#else
  return "reference BLAS (cblas)";
#endif
}

}  // namespace strata::kernels
