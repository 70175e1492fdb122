// `strata plan --format csv`: every ranked candidate as one CSV row (best first), for a
// spreadsheet or a plotting script: the layout, the predicted step time with its likely
// range, throughput, MFU and memory. Numbers in SI units (seconds, GiB, fractions), as
// printed by the shortest round-trip formatting; a missing value is an empty cell.
#pragma once
#include <string>

#include "report/plan_report.h"

namespace strata::report {

// A header row, then one row per plan of `report` in its order.
std::string format_plan_csv(const PlanReport& report);

}  // namespace strata::report
