// JsonSchema: checks a JSON document against a JSON Schema (draft 2020-12), for exactly
// the keywords strata's own schemas (schemas/*.schema.json) use: type, properties,
// required, additionalProperties, items, enum, const, minimum / maximum,
// exclusiveMinimum / exclusiveMaximum, minItems / maxItems, oneOf, anyOf and $ref (to
// "#/$defs/..." of the same file, or "file.schema.json#/$defs/..." of another schema given
// to the constructor, matched by the last segment of its $id). A schema using any other
// keyword is refused when constructed, so a schema can never silently check less than it
// says. YAML files are checked as their JSON equivalent.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata {

// One violation: `path` is the JSON pointer of the offending value ("" = the document,
// "/strategy/tp", "/plans/0"), `message` what was expected there.
struct SchemaViolation {
  std::string path;
  std::string message;
};

class JsonSchema {
 public:
  // `root` is the schema to check against; `others` are schemas its $refs may name. Throws
  // InputError naming the schema path of an unsupported keyword or an unresolvable $ref.
  explicit JsonSchema(nlohmann::json root, std::vector<nlohmann::json> others = {});

  // Every violation found (empty: the document is valid).
  std::vector<SchemaViolation> validate(const nlohmann::json& doc) const;

  const nlohmann::json& root() const { return docs_.front(); }

 private:
  struct Cursor {  // a schema inside one of docs_
    const nlohmann::json* schema;
    std::size_t doc;
  };
  void check_keywords(const nlohmann::json& schema, std::size_t doc, const std::string& where) const;
  Cursor resolve(const std::string& ref, std::size_t doc, const std::string& where) const;
  void check(const nlohmann::json& value, Cursor at, const std::string& path,
             std::vector<SchemaViolation>& out) const;
  std::vector<nlohmann::json> docs_;  // docs_[0] = root
};

// The JSON pointer of `key` under `path` ("/a" + "b/c" -> "/a/b~1c").
std::string json_pointer_append(const std::string& path, const std::string& key);

}  // namespace strata
