#include "costmodel/gemm_cost.h"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "common/errors.h"
#include "test_profiles.h"

namespace sc = strata::costmodel;
using sc::DType;

namespace {

using sc::testing::gemm_row;

// A measured table: an m sweep for one weight shape, and a few square sizes.
sc::DeviceProfile measured_device() {
  auto p = sc::testing::toy_device();
  p.gemm_source = {"measured", {{"tool", "unit test"}}};
  // m sweep at n = k = 4096: efficiency rises with m.
  p.gemm_table = {gemm_row(256, 4096, 4096, 60), gemm_row(1024, 4096, 4096, 160), gemm_row(4096, 4096, 4096, 560),
                  // squares
                  gemm_row(512, 512, 512, 4), gemm_row(2048, 2048, 2048, 70), gemm_row(8192, 8192, 8192, 3400)};
  return p;
}

}  // namespace

TEST(GemmCost, ReturnsMeasuredTimesExactlyAtMeasuredPoints) {
  auto p = measured_device();
  sc::GemmCost g(p);
  for (const auto& s : p.gemm_table) {
    auto e = g.estimate(s.m, s.n, s.k, s.dtype);
    EXPECT_EQ(e.source, sc::TimeSource::Measured);
    EXPECT_DOUBLE_EQ(e.time_s, s.time_us * 1e-6);
    EXPECT_TRUE(g.measured(s.m, s.n, s.k, s.dtype));
  }
  EXPECT_FALSE(g.measured(1000, 4096, 4096, DType::Bf16));
  EXPECT_FALSE(g.measured(256, 4096, 4096, DType::Fp32));
  EXPECT_TRUE(g.has_table(DType::Bf16));
  EXPECT_FALSE(g.has_table(DType::Fp32));
}

TEST(GemmCost, InterpolationAlongOneDimensionIsMonotoneAndBounded) {
  sc::GemmCost g(measured_device());
  double prev = g.time_s(1024, 4096, 4096, DType::Bf16);
  for (std::int64_t m = 1025; m <= 4096; m += 37) {
    auto e = g.estimate(m, 4096, 4096, DType::Bf16);
    EXPECT_EQ(e.source, m == 4096 ? sc::TimeSource::Measured : sc::TimeSource::Interpolated);
    EXPECT_GE(e.time_s, prev);
    EXPECT_GE(e.time_s, 160e-6);
    EXPECT_LE(e.time_s, 560e-6);
    prev = e.time_s;
  }
  // Log-log linear: at the geometric midpoint (m = 2048) the time is the geometric mean.
  EXPECT_NEAR(g.time_s(2048, 4096, 4096, DType::Bf16), std::sqrt(160e-6 * 560e-6), 1e-12);
}

TEST(GemmCost, InterpolationInFlopsBetweenUnrelatedShapesIsMonotone) {
  sc::GemmCost g(measured_device());
  // Squares between 2048^3 and 8192^3 share no two dimensions with a row except the
  // measured ones: the achieved-FLOP/s curve is used.
  double prev = g.time_s(2048, 2048, 2048, DType::Bf16);
  for (std::int64_t s = 2100; s < 8192; s += 97) {
    auto e = g.estimate(s, s, s, DType::Bf16);
    EXPECT_EQ(e.source, sc::TimeSource::Interpolated) << s;
    EXPECT_GT(e.time_s, prev) << s;
    prev = e.time_s;
  }
  EXPECT_LT(prev, 3400e-6);
}

TEST(GemmCost, OutsideTheTableTheEndRatesHoldAndStreamingBoundsThem) {
  auto p = measured_device();
  sc::GemmCost g(p);
  // Compute bound, bigger than any measured shape: the largest row's rate (8192^3 in
  // 3400 us), not the roofline's flat efficiency.
  const double m = 16384, n = 16384, k = 16384;
  auto e = g.estimate(16384, 16384, 16384, DType::Bf16);
  EXPECT_EQ(e.source, sc::TimeSource::Interpolated);
  const double rate = 2.0 * 8192 * 8192 * 8192 / 3400e-6;
  EXPECT_NEAR(e.time_s, 2 * m * n * k / rate, 1e-12);
  // fp32 has no table: roofline everywhere.
  EXPECT_NEAR(g.time_s(4096, 4096, 4096, DType::Fp32), 2.0 * 4096 * 4096 * 4096 / (50e12 * 0.8), 1e-12);
  // Memory bound (m = 1, GEMV-like, below the table): never faster than streaming the
  // operands once, bytes / (bw * mem_eff).
  const double bytes = (1.0 * 8192 + 8192.0 * 8192 + 1.0 * 8192) * 2;
  EXPECT_NEAR(g.time_s(1, 8192, 8192, DType::Bf16), bytes / (2000e9 * 0.9), 1e-15);
  EXPECT_DOUBLE_EQ(g.roofline_time_s(1, 8192, 8192, DType::Bf16), bytes / (2000e9 * 0.9));
  // Batched: 8 GEMMs of (256, 256, 64) are one (2048, 256, 64) GEMM on the curve, but
  // never below 8 x their own operand traffic.
  const double member_bytes = (256.0 * 64 + 64.0 * 256 + 256.0 * 256) * 2;
  const auto b = g.batched(8, 256, 256, 64, DType::Bf16);
  EXPECT_GE(b.time_s, 8 * member_bytes / (2000e9 * 0.9) * (1 - 1e-12));
  EXPECT_GE(b.time_s, g.time_s(2048, 256, 64, DType::Bf16) * (1 - 1e-12));
}

TEST(GemmCost, RejectsEmptyShapesAndMissingDtypes) {
  sc::GemmCost g(measured_device());
  EXPECT_THROW(g.time_s(0, 1, 1, DType::Bf16), strata::InputError);
  EXPECT_THROW(g.time_s(8, 8, 8, DType::Fp16), strata::InputError);  // no fp16 peak
}

TEST(GemmCost, Fp8UsesItsRowAndIsCappedAtThePeakRatioOfBf16) {
  auto p = sc::testing::toy_device();
  p.peak_tflops[DType::Fp8] = 800;  // 2x bf16's 400
  // bf16: 100 TF at 1024^3, 500 TF at 8192^3; fp8: one best-shape row, 700 TF at 8192^3.
  const double f1 = 2.0 * 1024 * 1024 * 1024, f8 = 2.0 * 8192 * 8192 * 8192;
  p.gemm_table = {gemm_row(1024, 1024, 1024, f1 / 100e12 * 1e6), gemm_row(8192, 8192, 8192, f8 / 500e12 * 1e6)};
  sc::GemmSample r8 = gemm_row(8192, 8192, 8192, f8 / 700e12 * 1e6);
  r8.dtype = DType::Fp8;
  p.gemm_table.push_back(r8);
  sc::GemmCost g(p);
  // At the row: its time (the cap, 500 x 2 = 1000 TF, is faster).
  EXPECT_NEAR(g.time_s(8192, 8192, 8192, DType::Fp8), f8 / 700e12, 1e-12);
  // Small shape: the single fp8 row would claim 700 TF; the cap is bf16's 100 TF x 2.
  EXPECT_NEAR(g.time_s(1024, 1024, 1024, DType::Fp8), f1 / 200e12, 1e-12);
  // The bf16 times are unchanged by the fp8 row.
  EXPECT_NEAR(g.time_s(1024, 1024, 1024, DType::Bf16), f1 / 100e12, 1e-12);
}

// Fast accumulation (the FP8 recipes' forward GEMM): the fp8 rates, timed without it, divided
// by the profile's fp8_fast_accum_speedup, still under the peak-ratio cap; other dtypes and
// split accumulation unchanged.
TEST(GemmCost, Fp8FastAccumulationSpeedsTheFp8RateUpToTheCap) {
  auto p = sc::testing::toy_device();
  p.peak_tflops[DType::Fp8] = 800;
  const double f1 = 2.0 * 1024 * 1024 * 1024, f8 = 2.0 * 8192 * 8192 * 8192;
  p.gemm_table = {gemm_row(1024, 1024, 1024, f1 / 100e12 * 1e6), gemm_row(8192, 8192, 8192, f8 / 500e12 * 1e6)};
  sc::GemmSample r8 = gemm_row(8192, 8192, 8192, f8 / 700e12 * 1e6);
  r8.dtype = DType::Fp8;
  p.gemm_table.push_back(r8);
  p.fp8_fast_accum_speedup = 1.25;
  sc::GemmCost g(p);
  using sc::Accumulation;
  EXPECT_NEAR(g.estimate(8192, 8192, 8192, DType::Fp8, Accumulation::Split).time_s, f8 / 700e12, 1e-12);
  EXPECT_NEAR(g.estimate(8192, 8192, 8192, DType::Fp8, Accumulation::Fast).time_s, f8 / 875e12, 1e-12);
  // 700 x 1.5 = 1050 TF would pass the cap (bf16 500 TF x 2): the cap holds.
  p.fp8_fast_accum_speedup = 1.5;
  sc::GemmCost capped(p);
  EXPECT_NEAR(capped.estimate(8192, 8192, 8192, DType::Fp8, Accumulation::Fast).time_s, f8 / 1000e12, 1e-12);
  EXPECT_NEAR(capped.estimate(8192, 8192, 8192, DType::Bf16, Accumulation::Fast).time_s, f8 / 500e12, 1e-12);
}
