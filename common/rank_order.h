// Rank order strings ("tp-dp-pp", "tp-cp-dp-pp"): the axis names of a rank grid written
// innermost first. Shared by the strategy's validation and the cost model's rank grid so
// the two accept exactly the same strings.
#pragma once
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace strata {

// The four axis names innermost first, with "cp" inserted right after "tp" when the order
// omits it (Megatron-Core places context parallel next to tensor parallel); nullopt unless
// the order names tp, dp and pp once each, and cp at most once, joined by '-'.
inline std::optional<std::vector<std::string>> parse_rank_order(const std::string& order) {
  static const std::vector<std::string> kAxes = {"tp", "dp", "pp", "cp"};
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t dash = order.find('-', start);
    std::string part = order.substr(start, dash == std::string::npos ? std::string::npos : dash - start);
    const bool known = std::find(kAxes.begin(), kAxes.end(), part) != kAxes.end();
    if (!known || std::find(parts.begin(), parts.end(), part) != parts.end()) return std::nullopt;
    parts.push_back(std::move(part));
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  for (const char* required : {"tp", "dp", "pp"})
    if (std::find(parts.begin(), parts.end(), required) == parts.end()) return std::nullopt;
  if (std::find(parts.begin(), parts.end(), "cp") == parts.end())
    parts.insert(std::find(parts.begin(), parts.end(), "tp") + 1, "cp");
  return parts;
}

}  // namespace strata
