#include "runtime/lr_schedule.h"

#include <cmath>
#include <numbers>

#include <gtest/gtest.h>

#include "common/errors.h"

namespace sr = strata::runtime;

TEST(LrSchedule, ConstantWithoutWarmupIsThePeak) {
  sr::LrSchedule s;
  for (std::int64_t step : {1, 2, 100}) EXPECT_EQ(s.at(step, 3e-4), 3e-4);
}

TEST(LrSchedule, WarmupRisesLinearlyFromZeroToThePeak) {
  sr::LrSchedule s;
  s.warmup = 4;
  EXPECT_DOUBLE_EQ(s.at(1, 1.0), 0.25);
  EXPECT_DOUBLE_EQ(s.at(2, 1.0), 0.5);
  EXPECT_DOUBLE_EQ(s.at(4, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(s.at(5, 1.0), 1.0);  // constant afterwards
}

TEST(LrSchedule, CosineAndLinearDecayFromThePeakToTheMinimum) {
  sr::LrSchedule s;
  s.decay = sr::LrDecay::Cosine;
  s.warmup = 10;
  s.min = 0.1;
  s.decay_steps = 110;
  EXPECT_DOUBLE_EQ(s.at(10, 1.0), 1.0);                        // end of warm-up
  EXPECT_NEAR(s.at(60, 1.0), 0.1 + 0.9 * 0.5, 1e-12);           // half way: cos(pi/2) = 0
  EXPECT_NEAR(s.at(35, 1.0), 0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi / 4)), 1e-12);
  EXPECT_DOUBLE_EQ(s.at(110, 1.0), 0.1);
  EXPECT_DOUBLE_EQ(s.at(500, 1.0), 0.1);                        // held after the decay
  double prev = 2;
  for (std::int64_t step = 11; step <= 110; ++step) {
    EXPECT_LT(s.at(step, 1.0), prev) << step;
    prev = s.at(step, 1.0);
  }
  s.decay = sr::LrDecay::Linear;
  EXPECT_NEAR(s.at(60, 1.0), 0.55, 1e-12);
  EXPECT_NEAR(s.at(85, 1.0), 0.1 + 0.9 * 0.25, 1e-12);
}

TEST(LrSchedule, BadSettingsNameTheFlag) {
  auto err = [](sr::LrSchedule s, double peak) {
    try {
      s.validate(peak);
    } catch (const strata::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  sr::LrSchedule s;
  EXPECT_EQ(err(s, 1e-3), "no error");
  EXPECT_NE(err(s, 0).find("--lr"), std::string::npos);
  s.min = 2e-3;
  EXPECT_NE(err(s, 1e-3).find("--min-lr"), std::string::npos);
  s.min = 0;
  s.warmup = -1;
  EXPECT_NE(err(s, 1e-3).find("--warmup-steps"), std::string::npos);
  s.warmup = 10;
  s.decay = sr::LrDecay::Cosine;
  s.decay_steps = 5;
  EXPECT_NE(err(s, 1e-3).find("--decay-steps"), std::string::npos);
  EXPECT_EQ(sr::lr_decay_from_string("cosine"), sr::LrDecay::Cosine);
  EXPECT_THROW(sr::lr_decay_from_string("cosin"), strata::InputError);
}
