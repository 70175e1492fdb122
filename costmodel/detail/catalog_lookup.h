// One look-up for the catalogs compiled into strata (clusters, software stacks): a name
// from the catalog or a path to a YAML file, with the same errors for every kind (private
// to costmodel).
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::costmodel::detail {

// What strata_embed_files generates: (file stem, file text) per catalog file.
using EmbeddedFiles = std::vector<std::pair<std::string_view, std::string_view>>;

// The stems of `files`, sorted.
std::vector<std::string> catalog_names(const EmbeddedFiles& files);

struct CatalogText {
  std::string text;
  std::string source;  // "<folder>/<stem>.yaml" for a catalog entry, else the path
};

// The text of `name_or_path`: the catalog entry of that name (unless it looks like a path:
// a '/', ".yaml" or ".yml" in it), else the file. InputError naming `kind` ("cluster",
// "stack") for an empty name, a missing file, or an unknown name (with the closest names,
// the known ones and `hint` after them).
CatalogText read_catalog_entry(const std::string& name_or_path, const EmbeddedFiles& files,
                               const std::string& folder, const std::string& kind,
                               const std::string& hint = "");

}  // namespace strata::costmodel::detail
