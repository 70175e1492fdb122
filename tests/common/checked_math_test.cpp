#include "common/checked_math.h"

#include <gtest/gtest.h>

#include <limits>

TEST(CheckedMath, MultipliesAndAddsInRange) {
  EXPECT_EQ(strata::checked_mul(1 << 20, 1 << 20, "x"), std::int64_t{1} << 40);
  EXPECT_EQ(strata::checked_add(5, 7, "x"), 12);
}

TEST(CheckedMath, OverflowIsAnInputErrorNamingTheQuantity) {
  const auto big = std::numeric_limits<std::int64_t>::max() / 2 + 1;
  try {
    strata::checked_mul(big, 2, "global batch tokens");
    FAIL() << "no throw";
  } catch (const strata::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("global batch tokens"), std::string::npos);
  }
  EXPECT_THROW(strata::checked_add(std::numeric_limits<std::int64_t>::max(), 1, "x"),
               strata::InputError);
}

TEST(CheckedMath, RoundUpGivesTheSmallestMultipleNotBelow) {
  EXPECT_EQ(strata::checked_round_up(1536, 8, "x"), 1536);  // already a multiple
  EXPECT_EQ(strata::checked_round_up(512, 24, "x"), 528);   // 22 x 24
  EXPECT_EQ(strata::checked_round_up(1, 7, "x"), 7);
  const auto max = std::numeric_limits<std::int64_t>::max();
  EXPECT_THROW(strata::checked_round_up(max - 1, max / 2 + 1, "x"), strata::InputError);  // 2 steps overflow
}
