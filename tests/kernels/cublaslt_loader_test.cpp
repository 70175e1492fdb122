// cuBLASLt is loaded on the first call through kernels/cuda/cublaslt_loader.h, not at
// start: a process that links the CUDA backend but never runs a GEMM does not map the
// 540 MB library. No GPU is needed: cublasLtGetVersion runs on the host.
#include <gtest/gtest.h>

#include <cublasLt.h>

#include <fstream>
#include <sstream>
#include <string>

#include "kernels/cuda/cublaslt_loader.h"

namespace {

bool mapped(const std::string& library) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find(library) != std::string::npos;
}

TEST(CublasLtLoader, TheLibraryIsMappedOnlyAfterTheFirstCall) {
  ASSERT_FALSE(mapped("libcublasLt")) << "cuBLASLt was loaded at start (linked as a dependency?)";
  EXPECT_FALSE(strata::kernels::cublaslt_loaded());

  const size_t version = cublasLtGetVersion();  // the first call loads it
  EXPECT_TRUE(strata::kernels::cublaslt_loaded());
  EXPECT_TRUE(mapped("libcublasLt"));
  EXPECT_GE(version, 10000u) << "cuBLASLt reports a version below 1.0.0";
  EXPECT_EQ(strata::kernels::load_cublaslt(), "");
}

TEST(CublasLtLoader, CallsForwardToTheLibrary) {
  // Descriptor calls need no device: create, set, destroy through the forwarders.
  cublasLtMatrixLayout_t layout = nullptr;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&layout, CUDA_R_16BF, 64, 32, 64), CUBLAS_STATUS_SUCCESS);
  ASSERT_NE(layout, nullptr);
  const int batch = 4;
  EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatrixLayoutDestroy(layout), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDesc_t desc = nullptr;
  ASSERT_EQ(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasLtMatmulDescDestroy(desc), CUBLAS_STATUS_SUCCESS);
}

}  // namespace
