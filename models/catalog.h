// The built-in model catalog (models/catalog/*.yaml, embedded in the binary).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace strata::models {

struct CatalogEntry {
  std::string name;        // file stem, e.g. "gpt3-175b"
  std::string yaml;        // the file's text
};

const std::vector<CatalogEntry>& model_catalog();
std::optional<std::string> find_catalog_model(const std::string& name);  // YAML text
// Up to 3 catalog names closest to `name` (edit distance), for "did you mean".
std::vector<std::string> closest_model_names(const std::string& name);

}  // namespace strata::models
