// The BLAS library behind the CPU backend's GEMM (OpenBLAS on Debian): its thread
// policy and its identity for profile provenance.
#pragma once
#include <string>

namespace strata::kernels {

// Thread policy: OPENBLAS_NUM_THREADS (or OMP_NUM_THREADS) wins when set; otherwise one
// BLAS thread per rank when `ranks_on_node` > 1, so ranks do not oversubscribe cores.
// Returns the thread count in effect afterwards.
int configure_blas_threads(int ranks_on_node);
int blas_threads();
// "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64 (core Zen)", or a
// generic description when the BLAS is not OpenBLAS.
std::string blas_version();

}  // namespace strata::kernels
