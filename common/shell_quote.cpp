#include "common/shell_quote.h"

#include <cstring>

namespace strata {

namespace {

// An allow-list rather than a list of metacharacters: a character a shell treats specially
// that the list forgot (a control character, `^` in old Bourne shells) is quoted anyway.
bool plain_byte(unsigned char c) {
  if (c >= 0x80) return true;  // UTF-8: no shell gives these bytes a meaning
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return c != '\0' && std::strchr("@%+=:,./-_", c) != nullptr;
}

}  // namespace

std::string shell_quote(const std::string& v) {
  bool plain = !v.empty();
  for (char c : v) plain = plain && plain_byte(static_cast<unsigned char>(c));
  if (plain) return v;
  std::string out = "'";
  for (char c : v) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string shell_command(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ' ';
    out += shell_quote(w);
  }
  return out;
}

}  // namespace strata
