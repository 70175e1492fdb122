#include <gtest/gtest.h>

#include "report/report_html.h"
#include "tests/report/report_fixture.h"

namespace strata::report {
namespace {

int count(const std::string& s, const std::string& needle) {
  int n = 0;
  for (auto p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

TEST(ReportHtml, IsOneSelfContainedPageWithTheThreeCharts) {
  const std::string html = report_html(testing::make_report());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "</html>"), 1);
  // Breakdown + memory + best Gantt open, the other timeline in a <details>.
  EXPECT_EQ(count(html, "<svg "), 4);
  EXPECT_EQ(count(html, "</svg>"), 4);
  EXPECT_EQ(count(html, "<details"), 1);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  // The only URL is the SVG namespace.
  EXPECT_EQ(count(html, "http://"), count(html, "http://www.w3.org/2000/svg"));
}

TEST(ReportHtml, EscapesNamesFromTheUser) {
  const std::string html = report_html(testing::make_report());
  EXPECT_EQ(html.find("toy-<1b>"), std::string::npos);
  EXPECT_NE(html.find("toy-&lt;1b&gt;"), std::string::npos);
}

TEST(ReportHtml, MarksTheFastestStrategyThatFitsAsBestAndOverMemoryRows) {
  const auto d = testing::make_report();
  EXPECT_EQ(best_entry(d), 0);  // entry 2 is faster but does not fit
  const std::string html = report_html(d);
  EXPECT_EQ(count(html, "<tr class=\"best\">"), 1);
  EXPECT_EQ(count(html, "<tr class=\"over\">"), 1);
  EXPECT_NE(html.find("(best)"), std::string::npos);
}

TEST(ReportHtml, MeasuredColumnsAppearOnlyWithMeasurements) {
  auto d = testing::make_report();
  EXPECT_EQ(report_html(d).find("<th>measured</th>"), std::string::npos);
  d.entries[0].measured = MeasuredStep{"ok", 1.5, ""};
  d.entries[1].measured = MeasuredStep{"failed", 0, "error: boom"};
  const std::string html = report_html(d);
  EXPECT_NE(html.find("<th>measured</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>1.5 s</td><td>20.0%</td>"), std::string::npos);  // |1.2-1.5|/1.5
  EXPECT_NE(html.find(">failed</td>"), std::string::npos);
  EXPECT_EQ(count(html, "class=\"marker\""), 1);  // measured tick in the breakdown chart
}

TEST(ReportHtml, OpensTheFastestPipelinedTimelineWhenTheBestHasNoPipeline) {
  auto d = testing::make_report();
  EXPECT_EQ(pipelined_showcase(d), -1);  // best (entry 0) is pipelined
  EXPECT_EQ(count(report_html(d), "<details open>"), 0);
  d.entries[0].strategy.pp = 1;
  d.entries[1].strategy.pp = 2;  // the only pipelined entry that fits
  d.entries[2].strategy.pp = 4;  // pipelined, faster, but over memory
  d.entries[2].timeline = testing::hand_timeline(0.01);
  EXPECT_EQ(pipelined_showcase(d), 1);
  const std::string html = report_html(d);
  EXPECT_EQ(count(html, "<details open>"), 1);
  EXPECT_EQ(count(html, "<details>"), 1);
  EXPECT_LT(html.find("<details open><summary>#2"), html.find("<details><summary>#3"));
}

TEST(BreakdownChart, OneRowPerEntryInTheEntriesTimeUnit) {
  const auto d = testing::make_report();
  const auto c = breakdown_chart(d);
  ASSERT_EQ(c.rows.size(), 3u);
  EXPECT_EQ(c.series.size(), 6u);  // breakdown sums to the iteration: no "other"
  double sum = 0;
  for (double v : c.rows[0].values) sum += v;
  EXPECT_NEAR(sum, 1.20, 1e-9);  // seconds: iteration_s >= 1
}

TEST(BreakdownChart, AddsOtherWhenTheBreakdownDoesNotCoverTheIteration) {
  auto d = testing::make_report();
  const double compute = d.entries[1].prediction.breakdown_s.compute;
  d.entries[1].prediction.breakdown_s.compute = 0;  // compute's share is unattributed
  const auto c = breakdown_chart(d);
  ASSERT_EQ(c.series.size(), 7u);
  EXPECT_EQ(c.series.back().name, "other");
  EXPECT_NEAR(c.rows[1].values.back(), compute, 1e-9);
  EXPECT_NEAR(c.rows[0].values.back(), 0.0, 1e-9);
}

TEST(MemoryChart, OneBarPerStageAndTheCapacityLines) {
  const auto d = testing::make_report();
  const auto c = memory_chart(d);
  ASSERT_EQ(c.groups.size(), 3u);
  EXPECT_EQ(c.groups[0].values, (std::vector<double>{60, 58}));
  EXPECT_EQ(c.groups[0].bar_labels, (std::vector<std::string>{"s0", "s1"}));
  ASSERT_TRUE(c.reference.has_value());
  EXPECT_DOUBLE_EQ(*c.reference, 80);
  EXPECT_FALSE(c.second_reference.has_value());  // stage memory already counts the reserve
  EXPECT_NE(c.title.find("4 GiB reserve"), std::string::npos);
}

TEST(TimelineChart, RowsAreStageMajorComputeFirstAndEveryEventIsDrawn) {
  const auto d = testing::make_report();
  const auto c = timeline_chart(d.entries[0], "t");
  EXPECT_EQ(c.rows, (std::vector<std::string>{"stage 0 · compute", "stage 0 · pp_comm", "stage 0 · dp_comm",
                                              "stage 0 · optimizer", "stage 1 · compute", "stage 1 · pp_comm",
                                              "stage 1 · dp_comm", "stage 1 · optimizer"}));
  ASSERT_EQ(c.bars.size(), d.entries[0].timeline.size());
  for (std::size_t i = 0; i < c.bars.size(); ++i) {
    const auto& ev = d.entries[0].timeline[i];
    const std::string want = "stage " + std::to_string(ev.stage) + " · " + ev.stream;
    EXPECT_EQ(c.rows[static_cast<std::size_t>(c.bars[i].row)], want);
    // Iteration 1.2 s is in seconds; event times keep their unit.
    EXPECT_NEAR(c.bars[i].start, ev.start_s, 1e-12);
  }
  // Forward and backward have different colours; labels are F<m> / B<m>.
  EXPECT_EQ(c.bars[0].label, "F0");
  std::set<std::string> compute_colors;
  for (std::size_t i = 0; i < c.bars.size(); ++i)
    if (d.entries[0].timeline[i].stream == "compute") compute_colors.insert(c.bars[i].color);
  EXPECT_EQ(compute_colors.size(), 2u);
}

TEST(TimelineChart, UsesMillisecondsForShortIterations) {
  auto e = testing::make_entry(1, 2, 1, 0.02, 1, true);
  e.timeline = testing::hand_timeline(0.001);
  const auto c = timeline_chart(e, "t");
  EXPECT_EQ(c.axis_label, "time (ms)");
  EXPECT_NEAR(c.bars[0].end, 1.0, 1e-9);
}

}  // namespace
}  // namespace strata::report
