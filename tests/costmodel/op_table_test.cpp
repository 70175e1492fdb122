#include "costmodel/op_table.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "costmodel/op_cost.h"
#include "test_profiles.h"

namespace sc = strata::costmodel;
namespace sm = strata::models;

TEST(MeasuredOpTable, ReturnsMeasuredTimesAtMeasuredSizes) {
  sc::MeasuredOpTable t({{"norm", 1000, 10, 30}, {"norm", 4000, 20, 90}, {"activation", 500, 3, 6}});
  auto e = t.estimate(sm::OpKind::Norm, 4000);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->source, sc::TimeSource::Measured);
  EXPECT_NEAR(e->fwd_s, 20e-6, 1e-15);
  EXPECT_NEAR(e->bwd_s, 90e-6, 1e-15);
  EXPECT_FALSE(t.estimate(sm::OpKind::Loss, 1000));
  EXPECT_TRUE(t.has(sm::OpKind::Activation));
  EXPECT_FALSE(t.has(sm::OpKind::Rope));
  EXPECT_EQ(t.estimate(sm::OpKind::Norm, 0)->fwd_s, 0);
}

TEST(MeasuredOpTable, IsMonotoneBetweenPointsAndLinearOutside) {
  sc::MeasuredOpTable t({{"norm", 1000, 10, 30}, {"norm", 4000, 20, 90}});
  double prev_f = 10e-6, prev_b = 30e-6;
  for (double w = 1100; w < 4000; w += 100) {
    auto e = t.estimate(sm::OpKind::Norm, w);
    EXPECT_EQ(e->source, sc::TimeSource::Interpolated);
    EXPECT_GT(e->fwd_s, prev_f) << w;
    EXPECT_GT(e->bwd_s, prev_b) << w;
    EXPECT_LT(e->fwd_s, 20e-6);
    prev_f = e->fwd_s, prev_b = e->bwd_s;
  }
  // Geometric midpoint in log-log space.
  EXPECT_NEAR(t.estimate(sm::OpKind::Norm, 2000)->fwd_s, std::sqrt(10e-6 * 20e-6), 1e-12);
  // Outside the range: the end row's time per unit of work.
  EXPECT_NEAR(t.estimate(sm::OpKind::Norm, 8000)->fwd_s, 40e-6, 1e-12);
  EXPECT_NEAR(t.estimate(sm::OpKind::Norm, 500)->bwd_s, 15e-6, 1e-12);
}

TEST(MeasuredOpTable, DuplicateSizesAreMergedAndGemmKindsRejected) {
  sc::MeasuredOpTable t({{"residual", 100, 4, 4}, {"residual", 100, 9, 16}});
  EXPECT_NEAR(t.estimate(sm::OpKind::Residual, 100)->fwd_s, 6e-6, 1e-12);
  EXPECT_NEAR(t.estimate(sm::OpKind::Residual, 100)->bwd_s, 8e-6, 1e-12);
  EXPECT_THROW(sc::MeasuredOpTable({{"qkv", 100, 1, 1}}), strata::InputError);
  EXPECT_THROW(sc::MeasuredOpTable({{"norm", -1, 1, 1}}), strata::InputError);
}

TEST(OpCost, UsesTheMeasuredOpTableForCoveredKindsOnly) {
  auto p = sc::testing::toy_device();
  sm::Op norm;
  norm.kind = sm::OpKind::Norm;
  norm.sharding = sm::Sharding::Replicated;
  norm.bytes_fwd = 4096;
  sm::Op act = norm;
  act.kind = sm::OpKind::Activation;
  act.sharding = sm::Sharding::ColumnParallel;
  const auto before_norm = sc::OpCost(p).time(norm, 2, true, sc::DType::Fp32);
  const auto before_act = sc::OpCost(p).time(act, 2, false, sc::DType::Fp32);
  // Norm with SP on tp 2, fp32: 4096 * 2 / 2 bytes of work.
  EXPECT_EQ(sc::op_work(norm, 2, true, sc::DType::Fp32), 4096);
  EXPECT_EQ(sc::op_work(norm, 2, false, sc::DType::Fp32), 8192);
  p.op_table = {{"norm", 4096, 123, 456}};
  sc::OpCost oc(p);
  const auto n = oc.time(norm, 2, true, sc::DType::Fp32);
  EXPECT_NEAR(n.fwd_s, 123e-6, 1e-15);
  EXPECT_NEAR(n.bwd_s, 456e-6, 1e-15);
  EXPECT_EQ(n.source, sc::TimeSource::Measured);
  EXPECT_NE(n.fwd_s, before_norm.fwd_s);
  // Activation has no rows: unchanged roofline.
  EXPECT_EQ(oc.time(act, 2, false, sc::DType::Fp32).fwd_s, before_act.fwd_s);
  // Attention work is its model FLOPs per TP rank.
  sm::Op attn;
  attn.kind = sm::OpKind::AttentionCore;
  attn.sharding = sm::Sharding::HeadParallel;
  attn.flops_fwd = 8e6;
  EXPECT_EQ(sc::op_work(attn, 4, false, sc::DType::Bf16), 2e6);
}
