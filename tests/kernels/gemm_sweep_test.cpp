// GEMM validation and the sweep's validate-then-time rule: a correct kernel gets
// timed rows, a kernel with a wrong element gets an error and no time.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "kernels/backend.h"
#include "kernels/profiler/cpu_gemm_runner.h"
#include "kernels/profiler/gemm_check.h"
#include "kernels/profiler/gemm_sweep.h"

namespace strata::kernels::profiler {
namespace {

TEST(GemmCheck, PatternIsExactInEveryDtype) {
  std::vector<float> v(4096);
  fill_check_pattern(v.data(), v.size(), 5);
  std::set<float> distinct(v.begin(), v.end());
  EXPECT_GE(distinct.size(), 10u);
  for (float x : v) {
    EXPECT_LE(std::fabs(x), 1.0f);
    EXPECT_EQ(x * 8, std::round(x * 8));  // multiple of 1/8: exact in bf16/fp16/tf32
  }
}

TEST(GemmCheck, AcceptsExactProductRejectsOneWrongElement) {
  const std::int64_t m = 9, n = 7, k = 5;
  std::vector<float> a(m * k), b(k * n), c(m * n, 0);
  fill_check_pattern(a.data(), a.size(), 1);
  fill_check_pattern(b.data(), b.size(), 2);
  gemm_f32(false, false, m, n, k, 1.0f, a.data(), b.data(), 0.0f, c.data());
  GemmCheck ok = check_gemm(m, n, k, a.data(), b.data(), c.data(), GemmDType::Fp32);
  EXPECT_EQ(ok.checked, m * n);
  EXPECT_EQ(ok.wrong, 0);
  c[3 * n + 4] += 0.25f;
  GemmCheck bad = check_gemm(m, n, k, a.data(), b.data(), c.data(), GemmDType::Fp32);
  EXPECT_EQ(bad.wrong, 1);
  c[3 * n + 4] = NAN;
  EXPECT_EQ(check_gemm(m, n, k, a.data(), b.data(), c.data(), GemmDType::Fp32).wrong, 1);
}

TEST(GemmCheck, LargeProblemsAreSampledIncludingCorners) {
  const std::int64_t m = 300, n = 300, k = 300;  // 2.7e7 > 2^24: sampled
  std::vector<float> a(m * k), b(k * n), c(m * n);
  fill_check_pattern(a.data(), a.size(), 1);
  fill_check_pattern(b.data(), b.size(), 2);
  gemm_f32(false, false, m, n, k, 1.0f, a.data(), b.data(), 0.0f, c.data());
  EXPECT_EQ(check_gemm(m, n, k, a.data(), b.data(), c.data(), GemmDType::Fp32).checked, 16 * 64);
  c[(m - 1) * n + (n - 1)] += 1.0f;  // last row, last column
  EXPECT_EQ(check_gemm(m, n, k, a.data(), b.data(), c.data(), GemmDType::Fp32).wrong, 1);
}

TEST(GemmCheck, Bf16ToleranceAllowsOutputRounding) {
  const std::int64_t m = 4, n = 4, k = 64;
  std::vector<float> a(m * k), b(k * n), c(m * n);
  fill_check_pattern(a.data(), a.size(), 3);
  fill_check_pattern(b.data(), b.size(), 4);
  gemm_f32(false, false, m, n, k, 1.0f, a.data(), b.data(), 0.0f, c.data());
  for (auto& x : c) x *= 1.0f + 1.0f / 256;  // one bf16 ulp of relative error
  EXPECT_EQ(check_gemm(m, n, k, a.data(), b.data(), c.data(), GemmDType::Bf16).wrong, 0);
  EXPECT_GT(check_gemm(m, n, k, a.data(), b.data(), c.data(), GemmDType::Fp32).wrong, 0);
}

TEST(GemmSweep, TimesValidatedShapes) {
  CpuGemmRunner runner("test cpu", 0.1);
  GemmSweepOptions opt;
  opt.timing = {1, 2, 3, 0.01};
  std::vector<GemmProblem> ps{{33, 17, 65, "odd"}, {64, 64, 64, "square"}};
  std::size_t calls = 0;
  auto recs = run_gemm_sweep(runner, ps, opt, nullptr, [&](std::size_t, std::size_t, const std::string&) { ++calls; });
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_GE(calls, 3u);
  for (const auto& r : recs) {
    EXPECT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.check.wrong, 0);
    EXPECT_GE(r.time.reps, 2);
    EXPECT_GT(r.time.median_us, 0);
    EXPECT_NEAR(r.tflops, 2.0 * r.m * r.n * r.k / (r.time.median_us * 1e-6) / 1e12, 1e-12);
    EXPECT_NEAR(r.efficiency, r.tflops / 0.1, 1e-12);
  }
}

TEST(GemmSweep, WrongResultGetsErrorAndNoTime) {
  int runs = 0;
  CpuGemmRunner runner("faulty", 0.1,
                       [&](bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, float al, const float* a,
                           const float* b, float be, float* c) {
                         gemm_f32(ta, tb, m, n, k, al, a, b, be, c);
                         c[0] += 1.0f;  // one wrong element
                         ++runs;
                       });
  GemmSweepOptions opt;
  opt.timing = {1, 2, 3, 0.01};
  auto recs = run_gemm_sweep(runner, {{16, 16, 16, "x"}}, opt, nullptr);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_FALSE(recs[0].ok());
  EXPECT_EQ(recs[0].check.wrong, 1);
  EXPECT_EQ(recs[0].time.reps, 0);
  EXPECT_NE(recs[0].error.find("1 of 256 checked elements wrong"), std::string::npos) << recs[0].error;
  EXPECT_EQ(runs, 1);  // validated once, never timed
}

TEST(GemmSweep, SkipsProblemsAboveTheMemoryCap) {
  CpuGemmRunner runner("cpu", 0.1);
  GemmSweepOptions opt;
  opt.max_operand_gib = 1e-6;
  auto recs = run_gemm_sweep(runner, {{256, 256, 256, "big"}}, opt, nullptr);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_FALSE(recs[0].ok());
  EXPECT_EQ(recs[0].error.rfind("skipped", 0), 0u);
}

TEST(GemmSweep, CpuRunnerRejectsOtherDtypes) {
  CpuGemmRunner runner("cpu", 0.1);
  GemmSweepOptions opt;
  opt.dtypes = {GemmDType::Bf16};
  auto recs = run_gemm_sweep(runner, {{8, 8, 8, "x"}}, opt, nullptr);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_NE(recs[0].error.find("fp32 GEMMs only"), std::string::npos);
}

}  // namespace
}  // namespace strata::kernels::profiler
