#include "common/json_text.h"

namespace strata {

nlohmann::json parse_json(std::string_view text) { return nlohmann::json::parse(text); }

}  // namespace strata
