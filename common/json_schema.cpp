#include "common/json_schema.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "common/errors.h"

namespace strata {

using nlohmann::json;

namespace {

const std::set<std::string>& supported_keywords() {
  static const std::set<std::string> k = {
      // checked
      "type", "properties", "required", "additionalProperties", "items", "enum", "const", "minimum",
      "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems", "oneOf", "anyOf", "$ref",
      // annotations and structure
      "$schema", "$id", "$defs", "$comment", "title", "description", "default", "examples"};
  return k;
}

bool has_type(const json& v, const std::string& t) {
  if (t == "null") return v.is_null();
  if (t == "boolean") return v.is_boolean();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "number") return v.is_number();
  if (t == "integer") {
    if (v.is_number_integer()) return true;
    if (!v.is_number_float()) return false;
    const double x = v.get<double>();
    return std::isfinite(x) && std::floor(x) == x;
  }
  return false;
}

std::string type_of(const json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  return v.type_name();
}

std::string short_dump(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

std::string joined(const json& list) {
  std::string out;
  for (const auto& e : list) out += (out.empty() ? "" : ", ") + (e.is_string() ? e.get<std::string>() : e.dump());
  return out;
}

}  // namespace

std::string json_pointer_append(const std::string& path, const std::string& key) {
  std::string escaped;
  for (char c : key) {
    if (c == '~') escaped += "~0";
    else if (c == '/') escaped += "~1";
    else escaped += c;
  }
  return path + "/" + escaped;
}

JsonSchema::JsonSchema(json root, std::vector<json> others) {
  docs_.push_back(std::move(root));
  for (auto& o : others) docs_.push_back(std::move(o));
  for (std::size_t d = 0; d < docs_.size(); ++d) {
    if (!docs_[d].is_object()) input_error("schema {}: expected a JSON object", d);
    check_keywords(docs_[d], d, "");
  }
}

void JsonSchema::check_keywords(const json& schema, std::size_t doc, const std::string& where) const {
  const std::string id = docs_[doc].value("$id", fmt::format("schema {}", doc));
  if (schema.is_boolean()) return;
  if (!schema.is_object()) input_error("{}#{}: a schema must be an object or a boolean", id, where);
  for (const auto& [key, sub] : schema.items()) {
    const std::string at = json_pointer_append(where, key);
    if (!supported_keywords().count(key))
      input_error("{}#{}: keyword '{}' is not supported by strata's JsonSchema", id, where, key);
    if (key == "properties" || key == "$defs") {
      if (!sub.is_object()) input_error("{}#{}: expected an object", id, at);
      for (const auto& [name, s] : sub.items()) check_keywords(s, doc, json_pointer_append(at, name));
    } else if (key == "additionalProperties" || key == "items") {
      check_keywords(sub, doc, at);
    } else if (key == "oneOf" || key == "anyOf") {
      if (!sub.is_array() || sub.empty()) input_error("{}#{}: expected a non-empty array", id, at);
      for (std::size_t i = 0; i < sub.size(); ++i) check_keywords(sub[i], doc, at + "/" + std::to_string(i));
    } else if (key == "$ref") {
      if (!sub.is_string()) input_error("{}#{}: expected a string", id, at);
      (void)resolve(sub.get<std::string>(), doc, at);
    } else if (key == "required" || key == "enum") {
      if (!sub.is_array()) input_error("{}#{}: expected an array", id, at);
    } else if (key == "type") {
      for (const auto& t : sub.is_array() ? sub : json::array({sub}))
        if (!t.is_string() || !std::set<std::string>{"null", "boolean", "object", "array", "string", "number",
                                                     "integer"}.count(t.get<std::string>()))
          input_error("{}#{}: unknown type {}", id, at, t.dump());
    } else if (key == "minimum" || key == "maximum" || key == "exclusiveMinimum" || key == "exclusiveMaximum" ||
               key == "minItems" || key == "maxItems") {
      if (!sub.is_number()) input_error("{}#{}: expected a number", id, at);
    }
  }
}

JsonSchema::Cursor JsonSchema::resolve(const std::string& ref, std::size_t doc, const std::string& where) const {
  const std::size_t hash = ref.find('#');
  const std::string file = ref.substr(0, hash);
  const std::string fragment = hash == std::string::npos ? "" : ref.substr(hash + 1);
  std::size_t target = doc;
  if (!file.empty()) {
    target = docs_.size();
    for (std::size_t d = 0; d < docs_.size(); ++d) {
      const std::string id = docs_[d].value("$id", "");
      if (id == file || (id.size() > file.size() && id.compare(id.size() - file.size(), file.size(), file) == 0 &&
                         id[id.size() - file.size() - 1] == '/'))
        target = d;
    }
    if (target == docs_.size())
      input_error("{}#{}: $ref '{}' names a schema that was not given", docs_[doc].value("$id", "schema"), where, ref);
  }
  if (fragment.empty()) return {&docs_[target], target};
  try {
    const json::json_pointer p(fragment);
    if (!docs_[target].contains(p)) throw std::out_of_range("missing");
    return {&docs_[target].at(p), target};
  } catch (const std::exception&) {
    input_error("{}#{}: $ref '{}' does not resolve", docs_[doc].value("$id", "schema"), where, ref);
  }
}

std::vector<SchemaViolation> JsonSchema::validate(const json& doc) const {
  std::vector<SchemaViolation> out;
  check(doc, {&docs_.front(), 0}, "", out);
  return out;
}

void JsonSchema::check(const json& v, Cursor at, const std::string& path, std::vector<SchemaViolation>& out) const {
  const json& s = *at.schema;
  if (s.is_boolean()) {
    if (!s.get<bool>()) out.push_back({path, "no value is allowed here"});
    return;
  }
  const auto fail = [&](std::string msg) { out.push_back({path, std::move(msg)}); };
  if (s.contains("$ref")) check(v, resolve(s["$ref"].get<std::string>(), at.doc, ""), path, out);
  if (s.contains("type")) {
    const json types = s["type"].is_array() ? s["type"] : json::array({s["type"]});
    if (std::none_of(types.begin(), types.end(), [&](const json& t) { return has_type(v, t.get<std::string>()); })) {
      fail(fmt::format("expected {}, got {} {}", joined(types), type_of(v), short_dump(v)));
      return;  // the other keywords would only repeat the mismatch
    }
  }
  if (s.contains("enum")) {
    const json& e = s["enum"];
    if (std::find(e.begin(), e.end(), v) == e.end())
      fail(fmt::format("{} is not one of: {}", short_dump(v), joined(e)));
  }
  if (s.contains("const") && v != s["const"])
    fail(fmt::format("{} must be {}", short_dump(v), s["const"].dump()));
  if (v.is_number()) {
    const double x = v.get<double>();
    if (s.contains("minimum") && !(x >= s["minimum"].get<double>()))
      fail(fmt::format("{} is below the minimum {}", short_dump(v), s["minimum"].dump()));
    if (s.contains("maximum") && !(x <= s["maximum"].get<double>()))
      fail(fmt::format("{} is above the maximum {}", short_dump(v), s["maximum"].dump()));
    if (s.contains("exclusiveMinimum") && !(x > s["exclusiveMinimum"].get<double>()))
      fail(fmt::format("{} must be > {}", short_dump(v), s["exclusiveMinimum"].dump()));
    if (s.contains("exclusiveMaximum") && !(x < s["exclusiveMaximum"].get<double>()))
      fail(fmt::format("{} must be < {}", short_dump(v), s["exclusiveMaximum"].dump()));
  }
  if (v.is_object()) {
    if (s.contains("required"))
      for (const auto& k : s["required"])
        if (!v.contains(k.get<std::string>()))
          out.push_back({json_pointer_append(path, k.get<std::string>()), "missing required key"});
    const json* props = s.contains("properties") ? &s["properties"] : nullptr;
    for (const auto& [key, value] : v.items()) {
      const std::string p = json_pointer_append(path, key);
      if (props && props->contains(key)) {
        check(value, {&(*props)[key], at.doc}, p, out);
      } else if (s.contains("additionalProperties")) {
        const json& extra = s["additionalProperties"];
        if (extra.is_boolean() && !extra.get<bool>()) {
          std::string allowed;
          if (props)
            for (const auto& [name, unused] : props->items()) allowed += (allowed.empty() ? "" : ", ") + name;
          out.push_back({p, fmt::format("unknown key (allowed: {})", allowed)});
        } else {
          check(value, {&extra, at.doc}, p, out);
        }
      }
    }
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<std::size_t>())
      fail(fmt::format("has {} items, expected at least {}", v.size(), s["minItems"].dump()));
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<std::size_t>())
      fail(fmt::format("has {} items, expected at most {}", v.size(), s["maxItems"].dump()));
    if (s.contains("items"))
      for (std::size_t i = 0; i < v.size(); ++i) check(v[i], {&s["items"], at.doc}, path + "/" + std::to_string(i), out);
  }
  for (const char* key : {"oneOf", "anyOf"}) {
    if (!s.contains(key)) continue;
    std::size_t matches = 0;
    // The failing alternative that got deepest into the value (its type matched): its
    // violations are the useful ones ("/model/x: unknown key" rather than "not a string").
    std::vector<SchemaViolation> closest;
    for (const auto& alt : s[key]) {
      std::vector<SchemaViolation> errs;
      check(v, {&alt, at.doc}, path, errs);
      if (errs.empty()) ++matches;
      else if (closest.empty() || errs.front().path.size() > closest.front().path.size()) closest = errs;
    }
    const bool one = std::string(key) == "oneOf";
    if (matches == 0 && closest.front().path.size() > path.size())
      out.insert(out.end(), closest.begin(), closest.end());
    else if (matches == 0)
      fail(fmt::format("matches none of the {} alternatives (first: {}: {})", key,
                       closest.front().path.empty() ? "/" : closest.front().path, closest.front().message));
    else if (one && matches > 1)
      fail(fmt::format("matches {} of the oneOf alternatives, expected exactly one", matches));
  }
}

}  // namespace strata
