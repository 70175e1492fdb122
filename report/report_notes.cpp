#include "report/report_notes.h"

#include <algorithm>

#include <fmt/format.h>

namespace strata::report {

std::vector<std::string> provenance_notes(const costmodel::ClusterSpec& c) {
  // The planner's prediction notes say where each number comes from; this adds the
  // one trust warning a reader must not miss (lesson 11).
  const auto& d = c.device;
  if (!d.gemm_table.empty() || !d.collective_table.empty()) return {};
  return {
      fmt::format("profile `{}` is {}-only (not calibrated): run `strata calibrate` on the "
                  "hardware for measured GEMM and collective tables",
                  d.name, d.source.kind.empty() ? "datasheet" : d.source.kind)};
}

void append_new_notes(std::vector<std::string>& notes, const std::vector<std::string>& more) {
  for (const auto& n : more)
    if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
}

}  // namespace strata::report
