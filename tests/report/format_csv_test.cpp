// `strata plan --format csv`: a header and one row per plan, numbers that read back.
#include "report/format_csv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "tests/report/format_fixture.h"

namespace strata::report {
namespace {

std::vector<std::vector<std::string>> cells(const std::string& csv) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(csv);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> row;
    std::istringstream fields(line);
    for (std::string f; std::getline(fields, f, ',');) row.push_back(f);
    if (!line.empty() && line.back() == ',') row.push_back("");
    rows.push_back(row);
  }
  return rows;
}

TEST(PlanCsv, OneRowPerPlanUnderAHeaderOfTheSameWidth) {
  PlanReport r = testing::make_report();
  r.plans[1].strategy.recompute = planner::Recompute::Selective;
  r.plans[1].strategy.recompute_modules.layernorm = r.plans[1].strategy.recompute_modules.moe_act = true;
  r.plans[0].prediction.uncertainty = 0.1;
  r.plans[0].prediction.uncertainty_low = 0.9;
  r.plans[0].prediction.uncertainty_high = 1.2;
  const auto rows = cells(format_plan_csv(r));
  ASSERT_EQ(rows.size(), 3u);
  const auto& h = rows[0];
  ASSERT_EQ(rows[1].size(), h.size());
  ASSERT_EQ(rows[2].size(), h.size());
  const auto col = [&](const std::string& name) {
    const auto it = std::find(h.begin(), h.end(), name);
    EXPECT_NE(it, h.end()) << name;
    return static_cast<std::size_t>(it - h.begin());
  };
  // The fixture's plans: tp 2 pp 2 dp 2 at 1.0 s, tp 1 pp 4 dp 2 at 1.25 s.
  EXPECT_EQ(rows[1][col("rank")], "1");
  EXPECT_EQ(rows[1][col("tp")], "2");
  EXPECT_EQ(rows[2][col("pp")], "4");
  EXPECT_EQ(rows[1][col("recompute")], "selective");
  EXPECT_EQ(rows[1][col("recompute_modules")], "");  // strata's selective: no modules named
  EXPECT_EQ(rows[2][col("recompute_modules")], "layernorm moe_act");
  EXPECT_EQ(std::stod(rows[1][col("step_s")]), 1.0);
  EXPECT_EQ(std::stod(rows[2][col("step_s")]), 1.25);
  EXPECT_DOUBLE_EQ(std::stod(rows[1][col("likely_low_s")]), 0.9);
  EXPECT_DOUBLE_EQ(std::stod(rows[1][col("likely_high_s")]), 1.2);
  EXPECT_EQ(rows[2][col("likely_low_s")], "");  // no band: no range
  EXPECT_EQ(rows[1][col("fits_memory")], "true");
  EXPECT_EQ(rows[1][col("memory_capacity_gib")], "80");
}

TEST(PlanCsv, QuotesTextThatHoldsASeparator) {
  PlanReport r = testing::make_report();
  r.plans.resize(1);
  r.plans[0].prediction.precision = "bf16,\"x\"";
  EXPECT_NE(format_plan_csv(r).find(",\"bf16,\"\"x\"\"\","), std::string::npos) << format_plan_csv(r);
}

}  // namespace
}  // namespace strata::report
