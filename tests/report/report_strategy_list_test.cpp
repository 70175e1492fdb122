#include <gtest/gtest.h>

#include "report/strategy_list.h"
#include "common/errors.h"

namespace strata::report {
namespace {

std::string error_of(const std::string& yaml, int gpus = 16, std::int64_t gb = 64) {
  try {
    parse_strategy_list(yaml, "s.yaml", gpus, gb);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(StrategyList, FillsDefaults) {
  const auto s = parse_strategy_list(
      "strategies:\n  - {tp: 8, pp: 2}\n  - {tp: 2, pp: 4, vpp: 2, micro_batch: 2, zero: 1,"
      " recompute: selective, sequence_parallel: true, global_batch: 128}\n",
      "s.yaml", 16, 64);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].dp, 1);
  EXPECT_EQ(s[0].global_batch, 64);
  EXPECT_EQ(s[0].micro_batch, 1);
  EXPECT_EQ(s[0].schedule, planner::ScheduleKind::OneFOneB);
  EXPECT_EQ(s[1].dp, 2);
  EXPECT_EQ(s[1].vpp, 2);
  EXPECT_EQ(s[1].schedule, planner::ScheduleKind::Interleaved);
  EXPECT_EQ(s[1].recompute, planner::Recompute::Selective);
  EXPECT_TRUE(s[1].sequence_parallel);
  EXPECT_EQ(s[1].zero, 1);
  EXPECT_EQ(s[1].micro_batch, 2);
  EXPECT_EQ(s[1].global_batch, 128);
}

TEST(StrategyList, LeavesGlobalBatchZeroForTheCallerWithoutADefault) {
  const auto s = parse_strategy_list("strategies:\n  - {tp: 8}\n  - {tp: 8, global_batch: 32}\n", "s.yaml", 16, 0);
  EXPECT_EQ(s[0].global_batch, 0);
  EXPECT_EQ(s[1].global_batch, 32);
}

TEST(StrategyList, RejectsUnknownKeysAndWrongSizes) {
  EXPECT_NE(error_of("strategies:\n  - {tp: 8, ppp: 2}\n").find("ppp"), std::string::npos);
  EXPECT_NE(error_of("strategies:\n  - {tp: 8, pp: 2, dp: 2}\n").find("must equal --gpus (16)"), std::string::npos);
  EXPECT_NE(error_of("strategies:\n  - {tp: 3}\n").find("must divide --gpus (16)"), std::string::npos);
  EXPECT_NE(error_of("strategies: []\n").find("empty"), std::string::npos);
  EXPECT_NE(error_of("strategies:\n  - {tp: 8, schedule: zigzag}\n").find("zigzag"), std::string::npos);
  EXPECT_NE(error_of("strategy:\n  - {tp: 8}\n").find("strategy"), std::string::npos);
  EXPECT_NE(error_of("strategies:\n  - {tp: 0}\n").find("tp"), std::string::npos);
}

TEST(StrategyList, ErrorsNameTheFileAndLine) {
  const auto e = error_of("strategies:\n  - {tp: 8}\n  - {tp: 8, pp: 2, zero: 7}\n");
  EXPECT_NE(e.find("s.yaml:3"), std::string::npos) << e;
  EXPECT_NE(e.find("zero"), std::string::npos) << e;
}

}  // namespace
}  // namespace strata::report
