#include <gtest/gtest.h>

#include <cmath>

#include "validation/validate_stats.h"
#include "common/errors.h"

namespace strata::validation {
namespace {

TEST(Median, OddEvenAndEmpty) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_TRUE(std::isnan(median({})));
}

TEST(Median, AfterWarmupSkipsTheFirstSteps) {
  // Warm-up steps 10 and 9 would pull an unskipped median up to 3.5.
  EXPECT_DOUBLE_EQ(median_after_warmup({10, 9, 1, 2, 3}, 2), 2);
  EXPECT_DOUBLE_EQ(median_after_warmup({10, 9, 1, 2, 3, 4}, 2), 2.5);
  EXPECT_TRUE(std::isnan(median_after_warmup({10, 9}, 2)));
  EXPECT_DOUBLE_EQ(median_after_warmup({5}, 0), 5);
}

TEST(Mape, MatchesAHandComputedValue) {
  // |1.1-1|/1 = 10%, |0.9-1|/1 = 10%, |2-2.5|/2.5 = 20%: mean 13.333...%
  EXPECT_NEAR(mape_pct({1.1, 0.9, 2.0}, {1.0, 1.0, 2.5}), 40.0 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(mape_pct({2}, {2}), 0);
  EXPECT_TRUE(std::isnan(mape_pct({}, {})));
  EXPECT_THROW(mape_pct({1}, {0}), InternalError);
  EXPECT_THROW(mape_pct({1, 2}, {1}), InternalError);
}

TEST(AverageRanks, TiesShareTheMeanRank) {
  EXPECT_EQ(average_ranks({10, 20, 20, 30}), (std::vector<double>{1, 2.5, 2.5, 4}));
  EXPECT_EQ(average_ranks({3, 3, 3}), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(average_ranks({0.3, 0.1, 0.2}), (std::vector<double>{3, 1, 2}));
  EXPECT_EQ(average_ranks({5, 1, 5, 1, 5}), (std::vector<double>{4, 1.5, 4, 1.5, 4}));
}

TEST(Spearman, MatchesTheClosedFormWithoutTies) {
  // d = (-1, 1, -1, 1, 0): rho = 1 - 6·Σd² / (n(n²-1)) = 1 - 24/120 = 0.8
  EXPECT_NEAR(*spearman({1, 2, 3, 4, 5}, {2, 1, 4, 3, 5}), 0.8, 1e-12);
  EXPECT_NEAR(*spearman({1, 2, 3}, {10, 20, 30}), 1.0, 1e-12);
  EXPECT_NEAR(*spearman({1, 2, 3}, {0.3, 0.2, 0.1}), -1.0, 1e-12);
  // Monotone transforms do not change it.
  EXPECT_NEAR(*spearman({1, 2, 3, 4}, {1, 8, 27, 64}), 1.0, 1e-12);
}

TEST(Spearman, UsesPearsonOfAverageRanksWithTies) {
  // ranks a = (1, 2.5, 2.5, 4), b = (1, 3, 2, 4): Σdadb = 4.5, Σda² = 4.5, Σdb² = 5
  EXPECT_NEAR(*spearman({1, 2, 2, 3}, {1, 3, 2, 4}), 4.5 / std::sqrt(4.5 * 5), 1e-12);
}

TEST(Spearman, UndefinedForConstantOrTooFew) {
  EXPECT_FALSE(spearman({1}, {2}).has_value());
  EXPECT_FALSE(spearman({1, 1, 1}, {1, 2, 3}).has_value());
  EXPECT_FALSE(spearman({}, {}).has_value());
}

}  // namespace
}  // namespace strata::validation
