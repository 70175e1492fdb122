// The built-in model catalog (models/catalog/*.yaml, embedded in the binary).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace strata::models {

struct CatalogEntry {
  std::string name;        // its `name:` (= file stem), e.g. "gpt3-175b"
  std::string yaml;        // the file's text
  std::string source;      // its `source:` (where the numbers come from)
};

// Sorted by name.
const std::vector<CatalogEntry>& model_catalog();
std::optional<std::string> find_catalog_model(const std::string& name);  // YAML text; case-insensitive
// Up to 3 catalog names closest to `name` (edit distance), for "did you mean".
std::vector<std::string> closest_model_names(const std::string& name);

}  // namespace strata::models
