#include "common/json_text.h"

#include <set>
#include <vector>

namespace strata {

namespace {

// nlohmann::json::exception's constructor is protected: this is the error for a key
// that appears twice in one object, caught wherever parse errors are.
class JsonDuplicateKey : public nlohmann::json::exception {
 public:
  explicit JsonDuplicateKey(const std::string& what) : exception(120, what.c_str()) {}
};

}  // namespace

nlohmann::json parse_json(std::string_view text) {
  // One set of keys per object being parsed (objects nest).
  std::vector<std::set<std::string>> open_objects;
  auto check = [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) {
      open_objects.emplace_back();
    } else if (event == E::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == E::key && !open_objects.empty()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second)
        throw JsonDuplicateKey("duplicate key \"" + key + "\" in one JSON object (each key may appear once)");
    }
    return true;
  };
  return nlohmann::json::parse(text, check);
}

}  // namespace strata
