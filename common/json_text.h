// JSON text to nlohmann::json through one compiled function: json::parse is a template
// whose instantiation costs seconds of compile time (more under the sanitizers) in every
// file that calls it. Throws nlohmann::json::parse_error like json::parse, and a
// nlohmann::json::exception for a key that appears twice in one object (json::parse would
// keep the last one silently).
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/errors.h"

namespace strata {

nlohmann::json parse_json(std::string_view text);

// An integer of type Int from a JSON value, range-checked before narrowing: throws
// InputError naming `where` for a non-integer (1.5, "3", true) or a value outside Int's
// range (json::get<int> would wrap 4294967297 to 1).
template <typename Int, typename Json>
Int json_int(const Json& v, const std::string& where) {
  static_assert(std::numeric_limits<Int>::is_integer);
  if (v.is_number_unsigned()) {
    const auto u = v.template get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(std::numeric_limits<Int>::max())) return static_cast<Int>(u);
  } else if (v.is_number_integer()) {
    const auto s = v.template get<std::int64_t>();
    if (s >= 0 || std::numeric_limits<Int>::is_signed) {
      if (s >= static_cast<std::int64_t>(std::numeric_limits<Int>::min()) &&
          (s < 0 || static_cast<std::uint64_t>(s) <= static_cast<std::uint64_t>(std::numeric_limits<Int>::max())))
        return static_cast<Int>(s);
    }
  } else {
    input_error("{}: expected an integer, got {}", where, v.dump());
  }
  input_error("{}: {} is out of range, expected {} .. {}", where, v.dump(),
              +std::numeric_limits<Int>::min(), +std::numeric_limits<Int>::max());
}

}  // namespace strata
