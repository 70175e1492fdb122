#include "export/safe_text.h"

#include <fmt/format.h>

namespace strata::exports {

namespace {
bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }
}  // namespace

std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (is_control(c)) out += fmt::format("\\u{:04X}", c);
    else out += ch;
  }
  return out + "\"";
}

}  // namespace strata::exports
