#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace strata::report::svg {
namespace {

constexpr int kTitleHeight = 26;
constexpr int kLegendHeight = 22;
constexpr double kCharWidth = 6.6;  // rough width of a 12px sans-serif glyph

std::string fmt_value(const ValueFormat& f, double v) { return f ? f(v) : format_tick(v); }

double finite_or_zero(double v) { return std::isfinite(v) ? v : 0.0; }

std::string svg_open(int width, int height, const std::string& title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"{2}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<title>{2}</title>\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
      "<text x=\"8\" y=\"18\" font-size=\"15\" font-weight=\"bold\" fill=\"#222\">{2}</text>\n",
      width, height, escape(title));
}

// Legend items laid left to right starting at (x, y); returns the svg text.
std::string legend(const std::vector<Series>& items, double x, double y) {
  std::string out;
  for (const auto& s : items) {
    out += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\" "
        "stroke=\"#333\" stroke-width=\"0.5\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#333\">{}</text>\n",
        x, y - 10, escape(s.color), x + 16, y, escape(s.name));
    x += 16 + kCharWidth * static_cast<double>(s.name.size()) + 18;
  }
  return out;
}

}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double max_value, int target) {
  if (!std::isfinite(max_value) || max_value <= 0) return {0.0, 1.0};
  if (target < 1) target = 1;
  const double raw = max_value / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  double step = 10 * mag;
  if (norm <= 1.0 + 1e-9) step = mag;
  else if (norm <= 2.0 + 1e-9) step = 2 * mag;
  else if (norm <= 5.0 + 1e-9) step = 5 * mag;
  const auto n = static_cast<int>(std::ceil(max_value / step - 1e-9));
  std::vector<double> ticks;
  for (int i = 0; i <= std::max(n, 1); ++i) ticks.push_back(i * step);
  return ticks;
}

std::string format_tick(double v) {
  if (std::fabs(v) < 1e-300) return "0";
  return fmt::format("{:.6g}", v);
}

std::string stacked_bar_chart(const StackedBarChart& c) {
  const int rows = static_cast<int>(c.rows.size());
  const int gap = 10;
  const int right_margin = 110;  // room for the total text
  const double y0 = kTitleHeight + kLegendHeight + 12;
  const int height = static_cast<int>(y0) + std::max(rows, 1) * (c.bar_height + gap) + 52;
  const double x0 = c.label_width;
  const double plot_w = std::max(50.0, static_cast<double>(c.width - c.label_width - right_margin));

  double max_total = 0;
  for (const auto& r : c.rows) {
    double t = 0;
    for (double v : r.values) t += std::max(0.0, finite_or_zero(v));
    max_total = std::max(max_total, t);
    if (r.marker) max_total = std::max(max_total, finite_or_zero(*r.marker));
  }
  const auto ticks = nice_ticks(max_total, 6);
  const double scale = plot_w / ticks.back();

  std::string out = svg_open(c.width, height, c.title);
  std::vector<Series> items = c.series;
  bool any_marker = std::any_of(c.rows.begin(), c.rows.end(), [](auto& r) { return r.marker.has_value(); });
  out += legend(items, 8, kTitleHeight + 16);
  if (any_marker) {
    double x = 8;
    for (const auto& s : items) x += 16 + kCharWidth * static_cast<double>(s.name.size()) + 18;
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#000\" "
        "stroke-width=\"3\"/><text x=\"{3:.1f}\" y=\"{2:.1f}\" fill=\"#333\">measured</text>\n",
        x + 6, kTitleHeight + 4.0, kTitleHeight + 16.0, x + 14);
  }

  const double plot_bottom = y0 + rows * (c.bar_height + gap);
  // Grid and axis.
  for (double t : ticks) {
    const double x = x0 + t * scale;
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\" fill=\"#555\">{4}</text>\n",
        x, y0 - 4, plot_bottom, plot_bottom + 16, escape(fmt_value(c.format, t)));
  }
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#333\">{}</text>\n",
                     x0 + plot_w / 2, plot_bottom + 36, escape(c.axis_label));

  for (int i = 0; i < rows; ++i) {
    const auto& r = c.rows[static_cast<std::size_t>(i)];
    const double y = y0 + i * (c.bar_height + gap);
    out += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#222\">{}</text>\n",
        x0 - 8, y + c.bar_height / 2.0 + 4, escape(r.label));
    double x = x0, total = 0;
    for (std::size_t s = 0; s < r.values.size() && s < c.series.size(); ++s) {
      const double v = std::max(0.0, finite_or_zero(r.values[s]));
      total += v;
      if (v <= 0) continue;
      const double w = v * scale;
      out += fmt::format(
          "<rect class=\"seg\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{}\" "
          "fill=\"{}\"><title>{}: {} {}</title></rect>\n",
          x, y, w, c.bar_height, escape(c.series[s].color), escape(r.label),
          escape(c.series[s].name), escape(fmt_value(c.format, v)));
      x += w;
    }
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#222\">{}</text>\n", x + 6,
                       y + c.bar_height / 2.0 + 4, escape(fmt_value(c.format, total)));
    if (r.marker) {
      const double mx = x0 + std::max(0.0, finite_or_zero(*r.marker)) * scale;
      out += fmt::format(
          "<line class=\"marker\" x1=\"{0:.2f}\" y1=\"{1:.1f}\" x2=\"{0:.2f}\" y2=\"{2:.1f}\" "
          "stroke=\"#000\" stroke-width=\"3\"><title>{3}: {4} {5}</title></line>\n",
          mx, y - 3, y + c.bar_height + 3, escape(r.label), escape(r.marker_label),
          escape(fmt_value(c.format, *r.marker)));
    }
  }
  out += "</svg>\n";
  return out;
}

std::string grouped_bar_chart(const GroupedBarChart& c) {
  const double left = 70, right = 20, top = kTitleHeight + kLegendHeight + 14, bottom = 62;
  const double plot_w = std::max(50.0, c.width - left - right);
  const double plot_h = std::max(50.0, c.height - top - bottom);
  double max_v = 0;
  for (const auto& g : c.groups)
    for (double v : g.values) max_v = std::max(max_v, finite_or_zero(v));
  if (c.reference) max_v = std::max(max_v, finite_or_zero(*c.reference));
  if (c.second_reference) max_v = std::max(max_v, finite_or_zero(*c.second_reference));
  const auto ticks = nice_ticks(max_v, 5);
  const double scale = plot_h / ticks.back();
  const double base = top + plot_h;
  auto y_of = [&](double v) { return base - std::max(0.0, finite_or_zero(v)) * scale; };

  std::string out = svg_open(c.width, c.height, c.title);
  // Legend: bars, over-limit bars, and the reference lines.
  std::vector<Series> items{{c.bar_legend, c.bar_color}};
  if (c.reference || c.second_reference) items.push_back({"over limit", c.over_color});
  out += legend(items, 8, kTitleHeight + 16);
  double lx = 8;
  for (const auto& s : items) lx += 16 + kCharWidth * static_cast<double>(s.name.size()) + 18;
  if (c.reference) {
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#c00\" "
        "stroke-width=\"2\"/><text x=\"{3:.1f}\" y=\"{4:.1f}\" fill=\"#333\">{5}</text>\n",
        lx, kTitleHeight + 11.0, lx + 22, lx + 26, kTitleHeight + 16.0, escape(c.reference_label));
    lx += 30 + kCharWidth * static_cast<double>(c.reference_label.size()) + 18;
  }
  if (c.second_reference) {
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#c00\" "
        "stroke-width=\"2\" stroke-dasharray=\"6 4\"/><text x=\"{3:.1f}\" y=\"{4:.1f}\" "
        "fill=\"#333\">{5}</text>\n",
        lx, kTitleHeight + 11.0, lx + 22, lx + 26, kTitleHeight + 16.0,
        escape(c.second_reference_label));
  }

  for (double t : ticks) {
    const double y = y_of(t);
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\" fill=\"#555\">{5}</text>\n",
        left, y, left + plot_w, left - 6, y + 4, escape(fmt_value(c.format, t)));
  }
  out += fmt::format(
      "<text x=\"14\" y=\"{0:.1f}\" transform=\"rotate(-90 14 {0:.1f})\" text-anchor=\"middle\" "
      "fill=\"#333\">{1}</text>\n",
      top + plot_h / 2, escape(c.axis_label));

  const double limit = c.second_reference ? *c.second_reference
                       : c.reference      ? *c.reference
                                          : INFINITY;
  const std::size_t groups = std::max<std::size_t>(c.groups.size(), 1);
  const double group_w = plot_w / static_cast<double>(groups);
  for (std::size_t g = 0; g < c.groups.size(); ++g) {
    const auto& grp = c.groups[g];
    const double gx = left + g * group_w;
    const std::size_t n = std::max<std::size_t>(grp.values.size(), 1);
    const double bar_w = std::min(40.0, group_w * 0.8 / static_cast<double>(n));
    const double start = gx + (group_w - bar_w * static_cast<double>(n)) / 2;
    for (std::size_t b = 0; b < grp.values.size(); ++b) {
      const double v = finite_or_zero(grp.values[b]);
      const double x = start + b * bar_w;
      const double y = y_of(v);
      const std::string name = b < grp.bar_labels.size() ? grp.bar_labels[b] : std::to_string(b);
      out += fmt::format(
          "<rect class=\"bar\" x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" "
          "fill=\"{}\" stroke=\"#fff\" stroke-width=\"0.5\"><title>{} {}: {}</title></rect>\n",
          x, y, std::max(1.0, bar_w - 1), base - y, escape(v > limit ? c.over_color : c.bar_color),
          escape(grp.label), escape(name), escape(fmt_value(c.format, v)));
      if (bar_w >= 16 && b < grp.bar_labels.size())
        out += fmt::format(
            "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"10\" "
            "fill=\"#555\">{}</text>\n",
            x + bar_w / 2, base + 12, escape(grp.bar_labels[b]));
    }
    out += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#222\">{}</text>\n",
        gx + group_w / 2, base + 30, escape(grp.label));
  }
  out += fmt::format(
      "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#333\"/>\n",
      left, base, left + plot_w);
  if (c.reference)
    out += fmt::format(
        "<line class=\"reference\" x1=\"{0:.1f}\" y1=\"{1:.2f}\" x2=\"{2:.1f}\" y2=\"{1:.2f}\" "
        "stroke=\"#c00\" stroke-width=\"2\"><title>{3}: {4}</title></line>\n",
        left, y_of(*c.reference), left + plot_w, escape(c.reference_label),
        escape(fmt_value(c.format, *c.reference)));
  if (c.second_reference)
    out += fmt::format(
        "<line class=\"reference\" x1=\"{0:.1f}\" y1=\"{1:.2f}\" x2=\"{2:.1f}\" y2=\"{1:.2f}\" "
        "stroke=\"#c00\" stroke-width=\"2\" stroke-dasharray=\"6 4\"><title>{3}: {4}</title>"
        "</line>\n",
        left, y_of(*c.second_reference), left + plot_w, escape(c.second_reference_label),
        escape(fmt_value(c.format, *c.second_reference)));
  out += "</svg>\n";
  return out;
}

namespace {

struct GanttScale {
  double plot_w, span, scale;
};

GanttScale gantt_scale(const GanttChart& c) {
  const double plot_w = std::max(50.0, static_cast<double>(c.width - c.label_width - 20));
  double end = 0;
  for (const auto& b : c.bars) end = std::max(end, finite_or_zero(b.end));
  if (c.end_time) end = std::max(end, finite_or_zero(*c.end_time));
  // Scale to the data end (not the rounded tick) so the timeline fills the width.
  const double span = end > 0 ? end : 1.0;
  return {plot_w, span, plot_w / span};
}

}  // namespace

std::vector<GanttBar> merged_gantt_bars(const GanttChart& c) {
  if (c.merge_below_px <= 0) return c.bars;
  const double scale = gantt_scale(c).scale;
  const double thin = c.merge_below_px / scale, gap = 0.5 / scale;  // in time units
  std::vector<std::vector<const GanttBar*>> by_row(c.rows.size());
  for (const auto& b : c.bars)
    if (b.row >= 0 && b.row < static_cast<int>(c.rows.size())) by_row[static_cast<std::size_t>(b.row)].push_back(&b);
  std::vector<GanttBar> out;
  for (auto& row : by_row) {
    std::stable_sort(row.begin(), row.end(), [](const GanttBar* a, const GanttBar* b) { return a->start < b->start; });
    std::size_t i = 0;
    while (i < row.size()) {
      const GanttBar* first = row[i];
      std::size_t j = i + 1;
      double run_end = first->end;
      if (first->end - first->start < thin) {
        while (j < row.size() && row[j]->end - row[j]->start < thin && row[j]->start - run_end < gap) {
          run_end = std::max(run_end, row[j]->end);
          ++j;
        }
      }
      if (j == i + 1) {
        out.push_back(*first);
      } else {
        std::map<std::string, double> time_by_color;
        double busy = 0;
        for (std::size_t k = i; k < j; ++k) {
          time_by_color[row[k]->color] += row[k]->end - row[k]->start;
          busy += row[k]->end - row[k]->start;
        }
        GanttBar m;
        m.row = first->row;
        m.start = first->start;
        m.end = run_end;
        m.color = std::max_element(time_by_color.begin(), time_by_color.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; })
                      ->first;
        m.opacity = run_end > m.start ? std::clamp(busy / (run_end - m.start), 0.15, 1.0) : 1.0;
        m.tooltip = fmt::format("{} events too small to draw one by one ({:.0f}% busy), {} … {}", j - i,
                                m.opacity * 100,
                                first->tooltip.empty() ? first->label : first->tooltip,
                                row[j - 1]->tooltip.empty() ? row[j - 1]->label : row[j - 1]->tooltip);
        out.push_back(std::move(m));
      }
      i = j;
    }
  }
  return out;
}

std::string gantt_chart(const GanttChart& c) {
  const int rows = static_cast<int>(c.rows.size());
  const double top = kTitleHeight + kLegendHeight + 12;
  const double x0 = c.label_width;
  const double plot_h = std::max(rows, 1) * c.row_height;
  const int height = static_cast<int>(top + plot_h + 52);
  const auto [plot_w, span, scale] = gantt_scale(c);
  const auto ticks = nice_ticks(span, 8);

  std::string out = svg_open(c.width, height, c.title);
  out += legend(c.legend, 8, kTitleHeight + 16);
  for (int r = 0; r < rows; ++r) {
    const double y = top + r * c.row_height;
    if (r % 2 == 1)
      out += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" fill=\"#f4f4f4\"/>\n", x0,
          y, plot_w, c.row_height);
    out += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" font-size=\"11\" fill=\"#222\">{}</text>\n",
        x0 - 6, y + c.row_height / 2.0 + 4, escape(c.rows[static_cast<std::size_t>(r)]));
  }
  for (double t : ticks) {
    if (t > span * (1 + 1e-9)) break;
    const double x = x0 + t * scale;
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\" fill=\"#555\">{4}</text>\n",
        x, top, top + plot_h, top + plot_h + 16, escape(fmt_value(c.format, t)));
  }
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#333\">{}</text>\n",
                     x0 + plot_w / 2, top + plot_h + 36, escape(c.axis_label));
  for (const auto& b : merged_gantt_bars(c)) {
    if (b.row < 0 || b.row >= rows) continue;
    const double s = std::max(0.0, finite_or_zero(b.start));
    const double e = std::max(s, finite_or_zero(b.end));
    const double x = x0 + s * scale;
    const double w = std::max(0.6, (e - s) * scale);
    const double y = top + b.row * c.row_height + 2;
    const double h = c.row_height - 4;
    const std::string opacity = b.opacity < 1 ? fmt::format(" fill-opacity=\"{:.2f}\"", b.opacity) : "";
    out += fmt::format(
        "<rect class=\"ev\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" "
        "fill=\"{}\"{} stroke=\"#fff\" stroke-width=\"0.3\"><title>{}</title></rect>\n",
        x, y, w, h, escape(b.color), opacity, escape(b.tooltip.empty() ? b.label : b.tooltip));
    if (!b.label.empty() && w > 5.8 * static_cast<double>(b.label.size()) + 4)
      out += fmt::format(
          "<text x=\"{:.2f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"10\" "
          "fill=\"#fff\">{}</text>\n",
          x + w / 2, y + h / 2 + 3.5, escape(b.label));
  }
  out += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
      "stroke=\"#999\"/>\n",
      x0, top, plot_w, plot_h);
  out += "</svg>\n";
  return out;
}

std::string scatter_chart(const ScatterChart& c) {
  const double left = 70, right = 20, top = kTitleHeight + kLegendHeight + 10, bottom = 46;
  const double plot_w = c.width - left - right, plot_h = c.height - top - bottom;
  double max_x = c.x_reference ? finite_or_zero(*c.x_reference) : 0, max_y = 0;
  for (const auto& p : c.points) max_x = std::max(max_x, finite_or_zero(p.x)), max_y = std::max(max_y, finite_or_zero(p.y));
  const auto xt = nice_ticks(max_x, 8), yt = nice_ticks(max_y, 5);
  auto x_of = [&](double v) { return left + std::max(0.0, finite_or_zero(v)) * plot_w / xt.back(); };
  auto y_of = [&](double v) { return top + plot_h - std::max(0.0, finite_or_zero(v)) * plot_h / yt.back(); };
  const std::string grey = "#bab0ac", blue = "#4e79a7";
  std::string out = svg_open(c.width, c.height, c.title);
  out += legend({{c.point_legend, grey}, {c.highlight_legend, blue}}, 8, kTitleHeight + 16);
  for (double t : yt)
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
                       "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\" fill=\"#555\">{5}</text>\n",
                       left, y_of(t), left + plot_w, left - 6, y_of(t) + 4, escape(format_tick(t)));
  for (double t : xt)
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#555\">{}</text>\n", x_of(t),
                       top + plot_h + 16, escape(format_tick(t)));
  out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#555\"/>\n", left,
                     top + plot_h, left + plot_w);
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#333\">{}</text>\n",
                     left + plot_w / 2, top + plot_h + 36, escape(c.x_label));
  out += fmt::format("<text x=\"14\" y=\"{0:.1f}\" transform=\"rotate(-90 14 {0:.1f})\" text-anchor=\"middle\" "
                     "fill=\"#333\">{1}</text>\n",
                     top + plot_h / 2, escape(c.y_label));
  if (c.x_reference)
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#c00\" "
                       "stroke-width=\"2\"/><text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\" "
                       "fill=\"#c00\">{5}</text>\n",
                       x_of(*c.x_reference), top, top + plot_h, x_of(*c.x_reference) - 4, top + 12,
                       escape(c.x_reference_label));
  std::vector<const ScatterPoint*> front;
  for (const auto& p : c.points) {
    if (p.highlighted) {
      front.push_back(&p);
      continue;
    }
    out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}</title></circle>\n",
                       x_of(p.x), y_of(p.y), grey, escape(p.tooltip));
  }
  std::sort(front.begin(), front.end(), [](const auto* a, const auto* b) { return a->x < b->x; });
  std::string line;
  for (const auto* p : front) line += fmt::format("{:.1f},{:.1f} ", x_of(p->x), y_of(p->y));
  if (front.size() > 1)
    out += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"/>\n", line, blue);
  for (const auto* p : front)
    out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\"><title>{}</title></circle>\n",
                       x_of(p->x), y_of(p->y), blue, escape(p->tooltip));
  out += "</svg>\n";
  return out;
}

}  // namespace strata::report::svg
