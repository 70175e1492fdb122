// The cuBLASLt entry points strata calls, each forwarding to the library loaded on first
// use (kernels/cuda/cublaslt_loader.h says why). The definitions repeat the declarations
// of <cublasLt.h>: a signature that drifts from the header fails to compile. dlsym on
// the library's own handle always finds the library's definition, never these.
#include "kernels/cuda/cublaslt_loader.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <atomic>

namespace strata::kernels {
namespace {

struct CublasLtLibrary {
  void* handle = nullptr;
  std::string error;
};

std::atomic<bool> g_cublaslt_loaded{false};

// STRATA_CUBLASLT_SONAME (libcublasLt.so.<major>, the name the linker would record) through
// the executable's run path and the system's; then the toolkit's file found at configure
// time, for a toolkit outside both.
CublasLtLibrary& cublaslt_library() {
  static CublasLtLibrary lib = [] {
    CublasLtLibrary l;
    for (const char* name : {STRATA_CUBLASLT_SONAME, STRATA_CUBLASLT_PATH}) {
      if ((l.handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
      const char* why = ::dlerror();
      l.error += (l.error.empty() ? "" : "; ") + std::string(why != nullptr ? why : name);
    }
    if (l.handle != nullptr) {
      l.error.clear();
      g_cublaslt_loaded.store(true);
    }
    return l;
  }();
  return lib;
}

void* cublaslt_symbol(const char* name) {
  CublasLtLibrary& lib = cublaslt_library();
  return lib.handle != nullptr ? ::dlsym(lib.handle, name) : nullptr;
}

}  // namespace

bool cublaslt_loaded() noexcept { return g_cublaslt_loaded.load(); }

std::string load_cublaslt() {
  CublasLtLibrary& lib = cublaslt_library();
  return lib.handle != nullptr ? std::string() : "cannot load cuBLASLt: " + lib.error;
}

}  // namespace strata::kernels

// ret name(params) { forward args to the library's `name`, or return `fail` }
#define STRATA_CUBLASLT_FORWARD(ret, fail, name, params, args)                                   \
  ret CUBLASWINAPI name params {                                                                 \
    using Fn = ret(CUBLASWINAPI*) params;                                                        \
    static const Fn fn = reinterpret_cast<Fn>(strata::kernels::cublaslt_symbol(#name));                  \
    if (fn == nullptr) return fail;                                                              \
    return fn args;                                                                              \
  }

#define STRATA_FAIL CUBLAS_STATUS_NOT_INITIALIZED

extern "C" {

STRATA_CUBLASLT_FORWARD(size_t, 0, cublasLtGetVersion, (void), ())
STRATA_CUBLASLT_FORWARD(cublasStatus_t, STRATA_FAIL, cublasLtCreate, (cublasLtHandle_t * handle), (handle))
STRATA_CUBLASLT_FORWARD(cublasStatus_t, STRATA_FAIL, cublasLtDestroy, (cublasLtHandle_t handle), (handle))
STRATA_CUBLASLT_FORWARD(cublasStatus_t, STRATA_FAIL, cublasLtMatmulDescCreate,
                        (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute, cudaDataType_t scale),
                        (desc, compute, scale))
STRATA_CUBLASLT_FORWARD(cublasStatus_t, STRATA_FAIL, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc),
                        (desc))
STRATA_CUBLASLT_FORWARD(cublasStatus_t, STRATA_FAIL, cublasLtMatmulDescSetAttribute,
                        (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf,
                         size_t size),
                        (desc, attr, buf, size))
STRATA_CUBLASLT_FORWARD(cublasStatus_t, STRATA_FAIL, cublasLtMatrixLayoutCreate,
                        (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows, uint64_t cols,
                         int64_t ld),
                        (layout, type, rows, cols, ld))
STRATA_CUBLASLT_FORWARD(cublasStatus_t, STRATA_FAIL, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout),
                        (layout))
STRATA_CUBLASLT_FORWARD(cublasStatus_t, STRATA_FAIL, cublasLtMatrixLayoutSetAttribute,
                        (cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, const void* buf,
                         size_t size),
                        (layout, attr, buf, size))
STRATA_CUBLASLT_FORWARD(cublasStatus_t, STRATA_FAIL, cublasLtMatmulPreferenceCreate,
                        (cublasLtMatmulPreference_t * pref), (pref))
STRATA_CUBLASLT_FORWARD(cublasStatus_t, STRATA_FAIL, cublasLtMatmulPreferenceDestroy,
                        (cublasLtMatmulPreference_t pref), (pref))
STRATA_CUBLASLT_FORWARD(cublasStatus_t, STRATA_FAIL, cublasLtMatmulPreferenceSetAttribute,
                        (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                         const void* buf, size_t size),
                        (pref, attr, buf, size))
STRATA_CUBLASLT_FORWARD(cublasStatus_t, STRATA_FAIL, cublasLtMatmulAlgoGetHeuristic,
                        (cublasLtHandle_t handle, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
                         cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                         cublasLtMatmulPreference_t pref, int requested,
                         cublasLtMatmulHeuristicResult_t results[], int* returned),
                        (handle, op, a, b, c, d, pref, requested, results, returned))
STRATA_CUBLASLT_FORWARD(cublasStatus_t, STRATA_FAIL, cublasLtMatmul,
                        (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                         cublasLtMatrixLayout_t a_desc, const void* b, cublasLtMatrixLayout_t b_desc,
                         const void* beta, const void* c, cublasLtMatrixLayout_t c_desc, void* d,
                         cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t* algo, void* workspace,
                         size_t workspace_bytes, cudaStream_t stream),
                        (handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace,
                         workspace_bytes, stream))

}  // extern "C"

#undef STRATA_FAIL
#undef STRATA_CUBLASLT_FORWARD
