#include "models/catalog.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <utility>

#include <yaml-cpp/yaml.h>

namespace strata::models {
namespace detail {
// Generated from models/catalog/*.yaml by cmake/EmbedFiles.cmake (catalog_data.cpp).
const std::vector<std::pair<std::string_view, std::string_view>>& catalog_files();
}  // namespace detail

namespace {

// Lowercase, for case-insensitive lookups. (Not `lower`: in a unity build model_spec.cpp's
// lower(std::string) is the better match and this one went unused.)
std::string lowercase(std::string_view s) {
  std::string r(s);
  std::transform(r.begin(), r.end(), r.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return r;
}

// Levenshtein distance, case-insensitive.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

const std::vector<CatalogEntry>& model_catalog() {
  static const std::vector<CatalogEntry> entries = [] {
    std::vector<CatalogEntry> v;
    for (const auto& [stem, text] : detail::catalog_files()) {
      CatalogEntry e{std::string(stem), std::string(text), ""};
      try {
        YAML::Node n = YAML::Load(e.yaml);
        if (n.IsMap() && n["source"] && n["source"].IsScalar()) e.source = n["source"].Scalar();
        // The entry is named by its `name:` key: the embedded stem is cut at the first dot
        // ("megatron-1.7b.yaml" -> "megatron-1"); the catalog test checks name == file stem.
        if (n.IsMap() && n["name"] && n["name"].IsScalar()) e.name = n["name"].Scalar();
      } catch (const YAML::Exception&) {
        // A malformed catalog file is reported by load_model (and the catalog test).
      }
      v.push_back(std::move(e));
    }
    std::sort(v.begin(), v.end(),
              [](const CatalogEntry& a, const CatalogEntry& b) { return a.name < b.name; });
    return v;
  }();
  return entries;
}

std::optional<std::string> find_catalog_model(const std::string& name) {
  const std::string key = lowercase(name);
  for (const auto& e : model_catalog())
    if (lowercase(e.name) == key) return e.yaml;
  return std::nullopt;
}

std::vector<std::string> closest_model_names(const std::string& name) {
  const std::string key = lowercase(name);
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& e : model_catalog()) {
    const std::string n = lowercase(e.name);
    std::size_t d = edit_distance(key, n);
    // A name that starts with what was typed ("llama3" -> llama3-8b) counts as close.
    if (!key.empty() && n.rfind(key, 0) == 0) d = std::min<std::size_t>(d, 1);
    scored.emplace_back(d, e.name);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  // Only suggest names that share most of their letters with the query.
  const std::size_t limit = std::max<std::size_t>(3, key.size() / 2);
  for (const auto& [d, n] : scored) {
    if (out.size() == 3 || d > limit) break;
    out.push_back(n);
  }
  return out;
}

}  // namespace strata::models
