// The cuda backend (built only with CUDA): cuBLASLt GEMMs in every dtype and with
// transposes against the reference, NCCL on one rank, device errors as DeviceError.
// Every test skips when no CUDA device is visible.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/errors.h"
#include "kernels/buffer.h"
#include "kernels/cpu/mpi_communicator.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/cuda_memory.h"
#include "kernels/cuda/detail/half_bits.h"
#include "kernels/cuda/device_check.h"
#include "kernels/cuda/nccl_communicator.h"
#include "kernels/profiler/collective_sweep.h"
#include "kernels/profiler/cuda_gemm_runner.h"
#include "kernels/profiler/gemm_sweep.h"

namespace strata::kernels {
namespace {

#define SKIP_WITHOUT_DEVICE() \
  if (cuda_device_count() == 0) GTEST_SKIP() << cuda_unavailable_reason()

// Host conversions need no device.
TEST(HalfBits, RoundTripExactValuesAndRoundToNearestEven) {
  for (float v : {0.0f, 1.0f, -1.0f, 0.125f, -0.875f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f}) {
    EXPECT_EQ(detail::half_to_float(detail::float_to_half(v)), v) << v;
  }
  for (float v : {0.0f, 1.0f, -0.375f, std::ldexp(1.0f, 127), std::ldexp(-1.5f, -126)}) EXPECT_EQ(detail::bf16_to_float(detail::float_to_bf16(v)), v);
  EXPECT_EQ(detail::float_to_half(1.0f + 1.0f / 2048), detail::float_to_half(1.0f));  // tie to even
  EXPECT_EQ(detail::float_to_half(1e6f), 0x7c00);
  EXPECT_EQ(detail::bf16_to_float(detail::float_to_bf16(1.0f + 1.0f / 256)), 1.0f);  // tie to even
}

TEST(CudaDevice, CountIsZeroOrInfoIsSane) {
  if (cuda_device_count() == 0) {
    EXPECT_FALSE(cuda_unavailable_reason().empty());
    GTEST_SKIP() << cuda_unavailable_reason();
  }
  auto info = cuda_device_info(0);
  EXPECT_FALSE(info.name.empty());
  EXPECT_GT(info.memory_gib, 1.0);
  EXPECT_GT(info.sm_count, 0);
  EXPECT_NE(cuda_library_versions().find("NCCL"), std::string::npos);
}

TEST(CudaGemmRunner, EveryDtypeValidatesAndTimes) {
  SKIP_WITHOUT_DEVICE();
  profiler::CudaGemmRunner runner(0, {});
  profiler::GemmSweepOptions opt;
  opt.dtypes = all_gemm_dtypes();
  opt.timing = {1, 2, 3, 0.01};
  auto recs = profiler::run_gemm_sweep(runner, {{128, 256, 64, "a"}, {333, 77, 1029, "odd"}, {2048, 1024, 512, "big"}},
                                       opt, nullptr);
  ASSERT_EQ(recs.size(), 12u);
  for (const auto& r : recs) {
    EXPECT_TRUE(r.ok()) << to_string(r.dtype) << " " << r.m << "x" << r.n << "x" << r.k << ": " << r.error;
    EXPECT_GT(r.time.median_us, 0);
  }
}

TEST(CublasLtGemm, TransposesMatchTheReference) {
  SKIP_WITHOUT_DEVICE();
  cuda_set_device(0);
  auto mem = cuda_memory(0);
  CublasLtGemm gemm;
  const std::int64_t m = 37, n = 19, k = 53;
  std::vector<float> a(m * k), b(k * n);
  profiler::fill_check_pattern(a.data(), a.size(), 11);
  profiler::fill_check_pattern(b.data(), b.size(), 12);
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    // Store op(A) = A transposed when ta (so the stored matrix is A^T).
    std::vector<float> as(a.size()), bs(b.size());
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t l = 0; l < k; ++l) as[ta ? l * m + i : i * k + l] = a[i * k + l];
    for (std::int64_t l = 0; l < k; ++l)
      for (std::int64_t j = 0; j < n; ++j) bs[tb ? j * k + l : l * n + j] = b[l * n + j];
    Buffer da(*mem, as.size() * 4), db(*mem, bs.size() * 4), dc(*mem, m * n * 4);
    mem->upload(da.get(), as.data(), as.size() * 4);
    mem->upload(db.get(), bs.data(), bs.size() * 4);
    gemm.matmul(GemmDType::Fp32, ta, tb, m, n, k, 1.0f, da.get(), db.get(), 0.0f, dc.get());
    mem->synchronize();
    std::vector<float> c(m * n);
    mem->download(c.data(), dc.get(), c.size() * 4);
    auto check = profiler::check_gemm(m, n, k, a.data(), b.data(), c.data(), GemmDType::Fp32);
    EXPECT_EQ(check.wrong, 0) << "ta=" << ta << " tb=" << tb;
  }
}

TEST(CudaChecks, ErrorsCarryFileAndLine) {
  SKIP_WITHOUT_DEVICE();
  try {
    STRATA_CUDA_CHECK(cudaSetDevice(100000));
    FAIL() << "no error";
  } catch (const DeviceError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("cuda_backend_test.cpp:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cudaSetDevice"), std::string::npos) << msg;
  }
}

TEST(NcclCommunicator, OneRankCollectivesAreTrivialAndCorrect) {
  SKIP_WITHOUT_DEVICE();
  int argc = 0;
  char** argv = nullptr;
  mpi_init_once(&argc, &argv);
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  auto self = MpiCommunicator::from_groups({{r}});
  NcclCommunicator nccl(*self, 0);
  auto mem = cuda_memory(0);
  profiler::CollectiveSweepOptions opt;
  opt.max_bytes = 1 << 20;
  opt.timing = {1, 2, 3, 0.005};
  auto recs = profiler::run_collective_sweep(nccl, *mem, *self, opt);
  ASSERT_FALSE(recs.empty());
  for (const auto& rec : recs) {
    EXPECT_TRUE(rec.ok()) << profiler::to_string(rec.collective) << " " << rec.bytes << ": " << rec.error;
    EXPECT_TRUE(rec.trivial);
  }
}

}  // namespace
}  // namespace strata::kernels
