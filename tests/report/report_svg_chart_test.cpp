#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <regex>

#include "report/svg_chart.h"

namespace strata::report::svg {
namespace {

// Values of attribute `attr` on every element whose text matches `element_regex`.
std::vector<double> attr_values(const std::string& svg, const std::string& element_regex, const std::string& attr) {
  std::vector<double> out;
  std::regex el(element_regex + "[^>]*>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), el); it != std::sregex_iterator(); ++it) {
    const std::string tag = it->str();
    std::smatch m;
    if (std::regex_search(tag, m, std::regex(" " + attr + "=\"([-0-9.e]+)\""))) out.push_back(std::stod(m[1]));
  }
  return out;
}

int count(const std::string& s, const std::string& needle) {
  int n = 0;
  for (auto p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

TEST(SvgEscape, EscapesTheFiveXmlSpecials) {
  EXPECT_EQ(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(escape("plain"), "plain");
}

TEST(NiceTicks, StepsAreOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_EQ(nice_ticks(7, 5), (std::vector<double>{0, 2, 4, 6, 8}));
  EXPECT_EQ(nice_ticks(100, 5), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  const auto t = nice_ticks(0.93, 5);
  ASSERT_EQ(t.size(), 6u);
  EXPECT_NEAR(t[1], 0.2, 1e-12);
  EXPECT_NEAR(t.back(), 1.0, 1e-12);
  EXPECT_EQ(nice_ticks(0, 5), (std::vector<double>{0, 1}));
  EXPECT_EQ(nice_ticks(NAN, 5), (std::vector<double>{0, 1}));
}

TEST(NiceTicks, LastTickCoversTheMaximumForManyValues) {
  for (double v = 1e-6; v < 1e7; v *= 1.37) {
    const auto t = nice_ticks(v, 6);
    ASSERT_GE(t.size(), 2u);
    EXPECT_GE(t.back(), v * (1 - 1e-9)) << v;
    const double step = t[1];
    const double mant = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    EXPECT_TRUE(std::fabs(mant - 1) < 1e-6 || std::fabs(mant - 2) < 1e-6 || std::fabs(mant - 5) < 1e-6)
        << v << " step " << step;
    EXPECT_LE(t.size(), 14u) << v;  // about `target` intervals, never hundreds
  }
}

TEST(StackedBarChart, SegmentWidthsAreProportionalToValues) {
  StackedBarChart c;
  c.title = "t";
  c.series = {{"a", "#111"}, {"b", "#222"}, {"c", "#333"}};
  c.rows = {{"r1", {1, 2, 3}, std::nullopt, ""}, {"r2", {6, 0, 0}, std::nullopt, ""}};
  const std::string svg = stacked_bar_chart(c);
  const auto widths = attr_values(svg, "<rect class=\"seg\"", "width");
  ASSERT_EQ(widths.size(), 4u);  // zero-valued segments are not drawn
  EXPECT_NEAR(widths[1] / widths[0], 2.0, 1e-3);
  EXPECT_NEAR(widths[2] / widths[0], 3.0, 1e-3);
  EXPECT_NEAR(widths[0] + widths[1] + widths[2], widths[3], 1e-2);
  // Segments of a row are contiguous.
  const auto xs = attr_values(svg, "<rect class=\"seg\"", "x");
  EXPECT_NEAR(xs[0], c.label_width, 1e-6);
  EXPECT_NEAR(xs[1], xs[0] + widths[0], 1e-2);
  EXPECT_EQ(count(svg, "class=\"marker\""), 0);
  EXPECT_EQ(count(svg, "<svg"), 1);
  EXPECT_EQ(count(svg, "</svg>"), 1);
}

TEST(StackedBarChart, MarkerSitsAtItsValueOnTheSameScale) {
  StackedBarChart c;
  c.series = {{"a", "#111"}};
  c.rows = {{"r1", {4}, 2.0, "measured"}};
  const std::string svg = stacked_bar_chart(c);
  const double w = attr_values(svg, "<rect class=\"seg\"", "width").at(0);
  const double mx = attr_values(svg, "<line class=\"marker\"", "x1").at(0);
  EXPECT_NEAR(mx - c.label_width, w / 2, 1e-2);
  EXPECT_NE(svg.find(">measured<"), std::string::npos);  // legend entry
}

TEST(GroupedBarChart, BarHeightsScaleAndOverLimitBarsAreColoured) {
  GroupedBarChart c;
  c.groups = {{"g1", {10, 20}, {"s0", "s1"}}, {"g2", {40}, {"s0"}}};
  c.reference = 30;
  c.reference_label = "capacity";
  const std::string svg = grouped_bar_chart(c);
  const auto heights = attr_values(svg, "<rect class=\"bar\"", "height");
  ASSERT_EQ(heights.size(), 3u);
  EXPECT_NEAR(heights[1] / heights[0], 2.0, 1e-3);
  EXPECT_NEAR(heights[2] / heights[0], 4.0, 1e-3);
  std::regex bar("<rect class=\"bar\"[^>]* fill=\"([^\"]+)\"[^>]*><title>([^<]*)</title>");
  std::vector<std::pair<std::string, std::string>> fills;  // (title, fill)
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), bar); it != std::sregex_iterator(); ++it)
    fills.emplace_back((*it)[2], (*it)[1]);
  ASSERT_EQ(fills.size(), 3u);
  EXPECT_EQ(fills[0].second, c.bar_color);
  EXPECT_EQ(fills[1].second, c.bar_color);
  EXPECT_EQ(fills[2].second, c.over_color);
  EXPECT_EQ(fills[2].first.rfind("g2 s0", 0), 0u);
  // The reference line is at the height of a 30-unit bar.
  const auto ys = attr_values(svg, "<rect class=\"bar\"", "y");
  const double base = ys[0] + heights[0];
  const double ref_y = attr_values(svg, "<line class=\"reference\"", "y1").at(0);
  EXPECT_NEAR(base - ref_y, heights[0] * 3, 1e-2);
}

TEST(GanttChart, BarsMapTimeLinearlyOntoThePlotWidth) {
  GanttChart c;
  c.rows = {"stage 0", "stage 1"};
  c.bars = {{0, 0, 1, "#111", "F0", ""}, {1, 1, 3, "#222", "B0", ""}, {5, 0, 1, "#333", "bad row", ""}};
  c.end_time = 4;
  const std::string svg = gantt_chart(c);
  const auto xs = attr_values(svg, "<rect class=\"ev\"", "x");
  const auto ws = attr_values(svg, "<rect class=\"ev\"", "width");
  ASSERT_EQ(xs.size(), 2u);  // the bar on a missing row is skipped
  const double plot_w = c.width - c.label_width - 20;
  EXPECT_NEAR(xs[0], c.label_width, 1e-6);
  EXPECT_NEAR(ws[0], plot_w / 4, 1e-2);
  EXPECT_NEAR(xs[1], c.label_width + plot_w / 4, 1e-2);
  EXPECT_NEAR(ws[1], plot_w / 2, 1e-2);
  const auto ys = attr_values(svg, "<rect class=\"ev\"", "y");
  EXPECT_NEAR(ys[1] - ys[0], c.row_height, 1e-6);
}

TEST(GanttChart, MergesRunsOfSubPixelBarsIntoOneWithTheMajorityColour) {
  GanttChart c;
  c.rows = {"r0", "r1"};
  for (int i = 0; i < 1000; ++i)  // 0.001 time units = 0.4 px each at this width
    c.bars.push_back({0, i * 0.001, (i + 1) * 0.001, i % 3 == 0 ? "#bbb" : "#aaa", "", "e" + std::to_string(i)});
  c.bars.push_back({0, 1.0, 2.0, "#ccc", "wide", ""});
  c.bars.push_back({1, 0.5, 0.5005, "#ddd", "", "lonely"});  // thin but alone: kept
  c.end_time = 2;
  const auto m = merged_gantt_bars(c);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].row, 0);
  EXPECT_NEAR(m[0].start, 0, 1e-12);
  EXPECT_NEAR(m[0].end, 1.0, 1e-12);
  EXPECT_EQ(m[0].color, "#aaa");
  EXPECT_EQ(m[0].tooltip.rfind("1000 events", 0), 0u) << m[0].tooltip;
  EXPECT_NEAR(m[0].opacity, 1.0, 1e-9);  // back to back: fully busy
  EXPECT_EQ(m[1].label, "wide");
  EXPECT_EQ(m[2].tooltip, "lonely");
  EXPECT_EQ(std::count_if(m.begin(), m.end(), [](const GanttBar& b) { return b.row == 1; }), 1);
  const std::string svg = gantt_chart(c);
  EXPECT_EQ(count(svg, "class=\"ev\""), 3);
  c.merge_below_px = 0;
  EXPECT_EQ(merged_gantt_bars(c).size(), c.bars.size());
}

TEST(GanttChart, MergedSparseEventsAreDrawnFaint) {
  GanttChart c;
  c.rows = {"r0"};
  for (int i = 0; i < 200; ++i)  // 10% busy: 0.04 px wide every 0.4 px
    c.bars.push_back({0, i * 0.0005, i * 0.0005 + 0.00005, "#aaa", "", ""});
  c.end_time = 1;
  const auto m = merged_gantt_bars(c);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_NEAR(m[0].opacity, 0.15, 1e-9);  // 10% busy, drawn at the floor opacity
  EXPECT_NE(gantt_chart(c).find("fill-opacity=\"0.15\""), std::string::npos);
}

TEST(GanttChart, EscapesLabelsAndTooltips) {
  GanttChart c;
  c.title = "a <b> & c";
  c.rows = {"<row>"};
  c.bars = {{0, 0, 1, "#111", "x", "tip <&>"}};
  const std::string svg = gantt_chart(c);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_EQ(svg.find("<row>"), std::string::npos);
  EXPECT_NE(svg.find("tip &lt;&amp;&gt;"), std::string::npos);
}

}  // namespace
}  // namespace strata::report::svg
