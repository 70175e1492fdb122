// JSON text to nlohmann::json through one compiled function: json::parse is a template
// whose instantiation costs seconds of compile time (more under the sanitizers) in every
// file that calls it. Throws nlohmann::json::parse_error like json::parse.
#pragma once
#include <string_view>

#include <nlohmann/json.hpp>

namespace strata {

nlohmann::json parse_json(std::string_view text);

}  // namespace strata
