#include "planner/layout_request.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/errors.h"

namespace sp = strata::planner;

namespace {

// The strategy of a 512-sequence default batch, and the default lines it added.
struct Derived {
  sp::Strategy strategy;
  std::vector<std::string> defaults;
};

Derived derive(const sp::LayoutRequest& r, const std::string& precision = "") {
  Derived d;
  d.strategy = sp::derive_strategy(r, 512, precision, d.defaults);
  return d;
}

}  // namespace

TEST(LayoutRequest, DpIsWhatTheGpusLeaveAndTheBatchIsRoundedUp) {
  const Derived d = derive({.gpus = 64, .tp = 4, .pp = 2, .micro_batch = 3});
  EXPECT_EQ(d.strategy.dp, 8);
  EXPECT_EQ(d.strategy.global_batch, 528);  // 512 rounded up to a multiple of 3 x 8
  EXPECT_EQ(d.strategy.schedule, sp::ScheduleKind::OneFOneB);
  EXPECT_EQ(d.defaults, std::vector<std::string>{"global batch 528"});
}

TEST(LayoutRequest, WithoutGpusDpIsOneAndVirtualStagesInterleave) {
  const Derived d = derive({.vpp = 2, .global_batch = 16}, "fp8");
  EXPECT_EQ(d.strategy.dp, 1);
  EXPECT_EQ(d.strategy.global_batch, 16);
  EXPECT_EQ(d.strategy.precision, "fp8");
  EXPECT_EQ(d.strategy.schedule, sp::ScheduleKind::Interleaved);
  EXPECT_EQ(d.defaults, std::vector<std::string>{"dp 1"});
}

TEST(LayoutRequest, GpusThatDoNotMatchTheLayoutAreRefused) {
  EXPECT_THROW(derive({.gpus = 12, .tp = 8}), strata::InputError);
  try {
    derive({.gpus = 12, .tp = 8, .dp = 2});
    FAIL() << "--gpus 12 with dp 2 x tp 8 was accepted";
  } catch (const strata::InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--gpus (12) must equal dp x tp x pp x cp = 2 x 8 x 1 x 1 = 16");
  }
}
