#include "costmodel/detail/closest_names.h"

#include <algorithm>
#include <utility>

namespace strata::costmodel::detail {
namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::vector<std::string> closest_names(const std::string& query,
                                       const std::vector<std::string>& names, std::size_t max) {
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& n : names) {
    // A name that starts with the query ("h100" -> "h100-sxm-80gb") is a near miss.
    std::size_t d = n.rfind(query, 0) == 0 && !query.empty() ? 0 : edit_distance(query, n);
    scored.emplace_back(d, n);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < scored.size() && i < max; ++i) out.push_back(scored[i].second);
  return out;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace strata::costmodel::detail
