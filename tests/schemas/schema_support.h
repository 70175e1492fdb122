// Helpers of the schema tests: YAML as its JSON equivalent, the repository's schemas
// loaded with the others they $ref, and violations as one readable string.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "common/json_schema.h"

namespace strata::testing {

inline std::string source_path(const std::string& rel) { return std::string(STRATA_SOURCE_DIR) + "/" + rel; }

// A YAML node as JSON, with YAML 1.2 core-schema typing of plain scalars (null, true /
// false, integers, floats, .nan / .inf); quoted scalars stay strings.
inline nlohmann::json yaml_to_json(const YAML::Node& n) {
  using nlohmann::json;
  if (n.IsMap()) {
    json o = json::object();
    for (const auto& kv : n) o[kv.first.as<std::string>()] = yaml_to_json(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    json a = json::array();
    for (const auto& e : n) a.push_back(yaml_to_json(e));
    return a;
  }
  if (!n.IsDefined() || n.IsNull()) return nullptr;
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted
  static const std::regex null_re("~|null|Null|NULL"), true_re("true|True|TRUE"), false_re("false|False|FALSE");
  static const std::regex int_re("[-+]?[0-9]+");
  static const std::regex float_re("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  if (std::regex_match(s, null_re)) return nullptr;
  if (std::regex_match(s, true_re)) return true;
  if (std::regex_match(s, false_re)) return false;
  if (std::regex_match(s, int_re)) {
    try {
      return std::stoll(s);
    } catch (const std::out_of_range&) {
      return std::stod(s);
    }
  }
  if (std::regex_match(s, float_re)) return std::stod(s);
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return std::nan("");
  if (s == ".inf" || s == "+.inf" || s == ".Inf") return HUGE_VAL;
  if (s == "-.inf" || s == "-.Inf") return -HUGE_VAL;
  return s;
}

inline nlohmann::json load_yaml_as_json(const std::string& path) { return yaml_to_json(YAML::LoadFile(path)); }

inline nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// schemas/<name>, with every other schemas/*.schema.json available to its $refs.
inline JsonSchema load_schema(const std::string& name) {
  namespace fs = std::filesystem;
  std::vector<nlohmann::json> others;
  for (const auto& e : fs::directory_iterator(source_path("schemas")))
    if (e.path().filename().string().ends_with(".schema.json") && e.path().filename() != name)
      others.push_back(read_json_file(e.path().string()));
  return JsonSchema(read_json_file(source_path("schemas/" + name)), std::move(others));
}

inline std::string violations_text(const std::vector<SchemaViolation>& v) {
  std::string out;
  for (const auto& x : v) out += (x.path.empty() ? "/" : x.path) + ": " + x.message + "\n";
  return out;
}

// The key list of an "unknown key (allowed: a, b)" / "(known: a, b)" message, as a set.
inline std::set<std::string> listed_keys(const std::string& message) {
  static const std::regex list_re("\\((?:allowed|known): ([^)]*)\\)");
  std::smatch m;
  std::set<std::string> keys;
  if (!std::regex_search(message, m, list_re)) return keys;
  std::stringstream ss(m[1].str());
  for (std::string k; std::getline(ss, k, ',');) {
    k.erase(0, k.find_first_not_of(' '));
    k.erase(k.find_last_not_of(' ') + 1);
    if (!k.empty()) keys.insert(k);
  }
  return keys;
}

inline std::vector<std::string> files_in(const std::string& rel_dir, const std::string& suffix = ".yaml") {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(source_path(rel_dir)))
    if (e.path().string().ends_with(suffix)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace strata::testing
