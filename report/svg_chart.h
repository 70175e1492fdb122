// Small inline-SVG chart builders for the compare report: horizontal stacked bars,
// vertical grouped bars with a reference line, and a Gantt chart. Pure functions from
// data to an `<svg>` string (no scripts, no external assets); every mark carries a
// `<title>` so a browser shows its value on hover.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::report::svg {

// Escapes &, <, >, " and ' for XML text and attribute values.
std::string escape(std::string_view text);

// "Nice" axis ticks 0, step, 2·step, ... covering [0, max_value] with about
// `target` intervals; step is 1, 2 or 5 × 10^k. The last tick is >= max_value.
std::vector<double> nice_ticks(double max_value, int target = 5);

// Shortest decimal text for an axis label (0.25, 10, 1.5e-05).
std::string format_tick(double v);

using ValueFormat = std::function<std::string(double)>;

struct Series {
  std::string name;
  std::string color;  // CSS colour, e.g. "#4e79a7"
};

struct StackedBarRow {
  std::string label;
  std::vector<double> values;    // one per series, >= 0 (negative values are drawn as 0)
  std::optional<double> marker;  // e.g. a measured total: drawn as a black tick
  std::string marker_label;      // tooltip / legend text for the marker
};

struct StackedBarChart {
  std::string title;
  std::string axis_label;        // under the x axis, e.g. "seconds per iteration"
  std::vector<Series> series;
  std::vector<StackedBarRow> rows;
  ValueFormat format;            // value text in tooltips and totals; default format_tick
  int width = 960;
  int label_width = 260;         // left margin for row labels
  int bar_height = 22;
};

struct BarGroup {
  std::string label;             // under the group
  std::vector<double> values;    // one bar each
  std::vector<std::string> bar_labels;  // under each bar (optional, e.g. "s0")
};

struct GroupedBarChart {
  std::string title;
  std::string axis_label;        // y axis, e.g. "GiB per GPU"
  std::vector<BarGroup> groups;
  std::optional<double> reference;       // horizontal line, e.g. device capacity
  std::string reference_label;
  std::optional<double> second_reference;  // e.g. usable memory (capacity − reserve)
  std::string second_reference_label;
  std::string bar_color = "#4e79a7";
  std::string bar_legend = "per stage (max rank)";  // what one bar is
  std::string over_color = "#e15759";    // bars above `reference` (or second_reference)
  ValueFormat format;
  int width = 960;
  int height = 320;
};

struct GanttBar {
  int row = 0;
  double start = 0, end = 0;
  std::string color;
  std::string label;    // drawn inside the bar when it is wide enough
  std::string tooltip;  // <title>
  double opacity = 1;   // < 1 for merged runs: the busy share of the run's span
};

struct GanttChart {
  std::string title;
  std::string axis_label;          // e.g. "time (ms)"
  std::vector<std::string> rows;   // top to bottom
  std::vector<GanttBar> bars;
  std::vector<Series> legend;
  std::optional<double> end_time; // x axis range end; default max bar end
  ValueFormat format;              // axis tick text; default format_tick
  int width = 960;
  int label_width = 150;
  int row_height = 18;
  // Neighbouring bars on a row that are both narrower than this (in pixels) and less
  // than half a pixel apart are drawn as one bar (the colour covering most of its time,
  // the opacity its busy share, the tooltip counting the events), so a timeline of
  // 10^5 events stays a small page.
  double merge_below_px = 1.0;
};

// The bars gantt_chart draws after merging (exposed for tests).
std::vector<GanttBar> merged_gantt_bars(const GanttChart& chart);

// Points on two value axes (both from 0), e.g. step time against memory per GPU; the
// highlighted ones are joined by a line in x order (a front), and a vertical reference line
// marks a limit (device memory).
struct ScatterPoint {
  double x = 0, y = 0;
  bool highlighted = false;
  std::string tooltip;
};
struct ScatterChart {
  std::string title, x_label, y_label;
  std::vector<ScatterPoint> points;
  std::string point_legend, highlight_legend;
  std::optional<double> x_reference;
  std::string x_reference_label;
  int width = 960, height = 420;
};

std::string stacked_bar_chart(const StackedBarChart& chart);
std::string scatter_chart(const ScatterChart& chart);
std::string grouped_bar_chart(const GroupedBarChart& chart);
std::string gantt_chart(const GanttChart& chart);

}  // namespace strata::report::svg
