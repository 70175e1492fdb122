#include "cli/integer_flags.h"

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>

#include <fmt/format.h>

namespace strata::cli {

namespace {

// "" when `text` is a decimal integer that fits T; it is rewritten without leading zeros
// so that CLI11's base-0 conversion reads it as decimal. Otherwise the reason.
template <typename T>
std::string exact_integer(std::string& text) {
  std::string digits = text;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
    negative = digits[0] == '-';
    digits.erase(0, 1);
  }
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
    return "";  // not a plain decimal (e.g. 0x10): CLI11's own conversion decides
  const auto first = digits.find_first_not_of('0');
  digits = first == std::string::npos ? "0" : digits.substr(first);
  const std::string value = (negative && digits != "0" ? "-" : "") + digits;
  T parsed{};
  const auto [end, err] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (err != std::errc{} || end != value.data() + value.size())
    return fmt::format("{} is outside the range of this flag's {}-bit integer ({} to {})", text,
                       8 * sizeof(T), std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  text = value;
  return "";
}

void add_checks(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    const std::string type = opt->get_type_name();
    if (type == "INT")
      opt->transform(CLI::Validator([](std::string& s) { return exact_integer<std::int64_t>(s); }, ""));
    else if (type == "UINT")
      opt->transform(CLI::Validator([](std::string& s) { return exact_integer<std::uint64_t>(s); }, ""));
  }
  for (CLI::App* sub : app.get_subcommands({})) add_checks(*sub);
}

}  // namespace

void check_integer_flags(CLI::App& app) { add_checks(app); }

}  // namespace strata::cli
