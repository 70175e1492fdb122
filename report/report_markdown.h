// The compare report as a Markdown table, for pasting into issues and pull requests.
#pragma once
#include <string>

#include "report/report_data.h"

namespace strata::report {

// A heading line, one table row per entry (in the entries' order, the best marked),
// and a legend line. Measured columns appear only when some entry has a measurement.
std::string report_markdown(const ReportData& data);

}  // namespace strata::report
