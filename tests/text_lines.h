// A text split into its lines (no '\n' kept), for tests that look at output line by line.
#pragma once
#include <sstream>
#include <string>
#include <vector>

namespace strata::testing {

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace strata::testing
