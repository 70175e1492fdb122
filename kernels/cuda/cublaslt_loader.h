// cuBLASLt is loaded on first use, not when strata starts.
//
// Why: the library is about 540 MB; linked as a DT_NEEDED dependency, the dynamic loader
// maps and relocates it at every start, about 0.5 s of CPU per process (measured on the
// 2-core CI host: `strata --version` 0.56 s with it, a few ms without). Nearly every
// command (plan, simulate, compare, export...) never touches a GPU, so every one of them
// paid that. kernels/cuda/cublaslt_loader.cpp defines the cuBLASLt entry points strata
// calls, with the signatures of <cublasLt.h>; the first call dlopen()s the library and
// forwards, and every later call forwards directly. strata links cudart and NCCL as
// before (each costs a few ms to load).
#pragma once
#include <string>

namespace strata::kernels {

// Whether cuBLASLt has been loaded into this process (by a call through the loader).
bool cublaslt_loaded() noexcept;

// Loads cuBLASLt now if it is not yet loaded; empty on success, else why it failed
// (dlopen's message). The entry points return CUBLAS_STATUS_NOT_INITIALIZED (and
// cublasLtGetVersion 0) when the library cannot be loaded.
std::string load_cublaslt();

}  // namespace strata::kernels
