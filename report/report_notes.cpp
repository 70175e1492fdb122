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

std::string other_processor_note(const costmodel::ClusterSpec& c, const std::string& this_host) {
  // The processor is what precedes the first comma: model name with family and model.
  const auto processor = [](const std::string& line) { return line.substr(0, line.find(',')); };
  for (const costmodel::Provenance* src : {&c.device.gemm_source, &c.device.collective_source}) {
    if (!src->measured()) continue;
    const auto dev = src->fields.find("device");
    if (dev == src->fields.end() || processor(dev->second) == processor(this_host)) continue;
    return fmt::format("the measured tables of cluster {} come from {}, not this host ({}): predictions use "
                       "another processor's numbers; `strata validate --recalibrate` or `strata calibrate "
                       "--backend cpu` measures this one",
                       c.name, processor(dev->second), processor(this_host));
  }
  return "";
}

void append_new_notes(std::vector<std::string>& notes, const std::vector<std::string>& more) {
  for (const auto& n : more)
    if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
}

std::string short_note(const std::string& note) {
  std::string out;
  int depth = 0;
  for (const char c : note) {
    if (c == '(') ++depth;
    else if (c == ')' && depth > 0) --depth;
    else if (depth == 0) out += c;
  }
  if (depth > 0) return note.size() <= kShortNoteChars ? note : note.substr(0, kShortNoteChars - 3) + "...";
  // An aside removed leaves " :" / "  " / " ," behind: close those gaps.
  std::string tidy;
  for (const char c : out) {
    if ((c == ' ' || c == ':' || c == ',' || c == ';') && !tidy.empty() && tidy.back() == ' ') tidy.pop_back();
    tidy += c;
  }
  while (!tidy.empty() && (tidy.back() == ' ' || tidy.back() == ';' || tidy.back() == ',')) tidy.pop_back();
  if (tidy.size() <= kShortNoteChars) return tidy;
  std::size_t cut = tidy.rfind(' ', kShortNoteChars - 3);
  if (cut == std::string::npos || cut < kShortNoteChars / 2) cut = kShortNoteChars - 3;
  return tidy.substr(0, cut) + "...";
}

}  // namespace strata::report
