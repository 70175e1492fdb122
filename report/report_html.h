// The compare report as one self-contained HTML page: inline CSS and inline SVG, no
// scripts, no external assets. A table of the strategies side by side, a stacked
// step-time breakdown per strategy, memory per pipeline stage against the device
// capacity, and a Gantt chart of the simulated pipeline timeline (best strategy open,
// the others in collapsed <details>).
#pragma once
#include <string>

#include "report/report_data.h"
#include "report/svg_chart.h"

namespace strata::report {

std::string report_html(const ReportData& data);

// When the best strategy has no pipeline (pp = 1) its timeline shows little: the fastest
// pipelined strategy (preferring those that fit memory), whose timeline is shown open
// too; -1 when the best is pipelined or none is.
int pipelined_showcase(const ReportData& data);

// The pieces, exposed for tests.
svg::StackedBarChart breakdown_chart(const ReportData& data);
svg::GroupedBarChart memory_chart(const ReportData& data);
// Rows are (stage, stream) pairs that have events, stage-major, in the order
// compute, tp_comm, pp_comm, dp_comm, optimizer, then any other stream name.
svg::GanttChart timeline_chart(const ReportEntry& entry, const std::string& title);

}  // namespace strata::report
