// "Did you mean" helper for catalog look-ups (private to costmodel).
#pragma once
#include <string>
#include <vector>

namespace strata::costmodel::detail {

// Up to `max` names closest to `query` by edit distance (ties: alphabetical).
std::vector<std::string> closest_names(const std::string& query,
                                       const std::vector<std::string>& names,
                                       std::size_t max = 3);
// "a, b, c" for an error message.
std::string join_names(const std::vector<std::string>& names);

}  // namespace strata::costmodel::detail
