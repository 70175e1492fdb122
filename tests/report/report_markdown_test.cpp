#include <gtest/gtest.h>

#include <sstream>

#include "report/report_markdown.h"
#include "tests/report/report_fixture.h"

namespace strata::report {
namespace {

std::vector<std::string> table_rows(const std::string& md) {
  std::vector<std::string> rows;
  std::istringstream in(md);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("|", 0) == 0) rows.push_back(line);
  return rows;
}

int pipes(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '|')); }

TEST(ReportMarkdown, OneRowPerEntryWithTheHeaderColumnCount) {
  const auto d = testing::make_report();
  const auto rows = table_rows(report_markdown(d));
  ASSERT_EQ(rows.size(), 2 + d.entries.size());
  for (const auto& r : rows) EXPECT_EQ(pipes(r), pipes(rows[0])) << r;
  EXPECT_NE(rows[2].find("1 ★"), std::string::npos);  // best is entry 1
  EXPECT_NE(rows[4].find("**over**"), std::string::npos);
  EXPECT_EQ(rows[0].find("measured"), std::string::npos);
}

// Two entries of one layout that recompute different Megatron-Core modules read apart.
TEST(ReportMarkdown, RecomputeNamesTheModules) {
  auto d = testing::make_report();
  d.entries[0].strategy.recompute = planner::Recompute::Selective;
  d.entries[0].strategy.recompute_modules.mla_up_proj = true;
  const auto rows = table_rows(report_markdown(d));
  EXPECT_NE(rows[2].find("| selective:mla_up_proj |"), std::string::npos) << rows[2];
}

TEST(ReportMarkdown, TheStarSaysSoWhenNoStrategyFitsMemory) {
  auto d = testing::make_report();
  EXPECT_NE(report_markdown(d).find("★ fastest predicted strategy that fits memory."), std::string::npos);
  for (auto& e : d.entries) e.prediction.fits_memory = false;
  const std::string md = report_markdown(d);
  EXPECT_EQ(md.find("that fits memory"), std::string::npos) << md;
  EXPECT_NE(md.find("★ fastest predicted strategy; **none of them fits memory**."), std::string::npos) << md;
}

TEST(ReportMarkdown, ANewlineInAModelNameStaysInsideTheHeading) {
  auto d = testing::make_report();
  d.model = "gpt\n# injected heading\n| x |";
  d.cluster = "c\r";
  const std::string md = report_markdown(d);
  EXPECT_EQ(md.find("\n# injected"), std::string::npos) << md;
  EXPECT_EQ(md.find('\r'), std::string::npos);
  EXPECT_NE(md.find("### strata compare: gpt\\n# injected heading\\n| x | on c\\r"),
            std::string::npos) << md;
  const auto rows = table_rows(md);
  EXPECT_EQ(rows.size(), 2 + d.entries.size());  // the name added no table row
}

TEST(ReportMarkdown, MeasuredColumnsWhenGiven) {
  auto d = testing::make_report();
  d.entries[0].measured = MeasuredStep{"ok", 1.0, ""};
  d.entries[2].measured = MeasuredStep{"timeout", 0, "timed out"};
  const auto rows = table_rows(report_markdown(d));
  for (const auto& r : rows) EXPECT_EQ(pipes(r), pipes(rows[0])) << r;
  EXPECT_NE(rows[0].find("| measured | error |"), std::string::npos);
  EXPECT_NE(rows[2].find("| 1 s | 20.0% |"), std::string::npos);  // |1.2 - 1| / 1
  EXPECT_NE(rows[3].find("| – | – |"), std::string::npos);
  EXPECT_NE(rows[4].find("| timeout | – |"), std::string::npos);
}

TEST(FormatSeconds, PicksTheUnit) {
  EXPECT_EQ(format_seconds(0.0123), "12.3 ms");
  EXPECT_EQ(format_seconds(1.5), "1.5 s");
  EXPECT_EQ(format_seconds(4.2e-5), "42 us");
  EXPECT_EQ(format_percent(0.4567), "45.7%");
  EXPECT_EQ(format_count(1234567), "1.23M");
}

TEST(StrategyLabel, NamesOnlyNonDefaultExtras) {
  planner::Strategy s;
  s.tp = 2;
  s.pp = 4;
  s.dp = 8;
  EXPECT_EQ(strategy_label(s), "tp2 pp4 dp8 · mbs 1 · 1f1b");
  s.vpp = 2;
  s.schedule = planner::ScheduleKind::Interleaved;
  s.zero = 1;
  s.recompute = planner::Recompute::Selective;
  s.sequence_parallel = true;
  EXPECT_EQ(strategy_label(s), "tp2 pp4 dp8 · mbs 1 · vpp 2 · zero 1 · sel-recompute · sp · interleaved");
  // Megatron-Core's batch-level EP overlap and its delayed weight gradients tell two layouts apart.
  s.ep = 8;
  s.ep_overlap = true;
  EXPECT_EQ(strategy_label(s), "tp2 pp4 dp8 ep8 · mbs 1 · vpp 2 · zero 1 · sel-recompute · sp · ep-overlap · interleaved");
  s.delay_wgrad = true;
  EXPECT_EQ(strategy_label(s),
            "tp2 pp4 dp8 ep8 · mbs 1 · vpp 2 · zero 1 · sel-recompute · sp · ep-overlap · delay-wgrad · interleaved");
}

}  // namespace
}  // namespace strata::report
