#include "costmodel/detail/catalog_lookup.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "costmodel/detail/closest_names.h"

namespace strata::costmodel::detail {

std::vector<std::string> catalog_names(const EmbeddedFiles& files) {
  std::vector<std::string> out;
  for (const auto& f : files) out.emplace_back(f.first);
  std::sort(out.begin(), out.end());
  return out;
}

CatalogText read_catalog_entry(const std::string& name_or_path, const EmbeddedFiles& files,
                               const std::string& folder, const std::string& kind,
                               const std::string& hint) {
  if (name_or_path.empty())
    input_error("{} name is empty (expected a catalog name or a path)", kind);
  const bool path_like = name_or_path.find('/') != std::string::npos ||
                         name_or_path.find(".yaml") != std::string::npos ||
                         name_or_path.find(".yml") != std::string::npos;
  if (!path_like) {
    for (const auto& [stem, text] : files)
      if (stem == name_or_path) return {std::string(text), fmt::format("{}/{}.yaml", folder, stem)};
  }
  std::error_code ec;
  if (std::filesystem::is_regular_file(name_or_path, ec))
    return {read_file(name_or_path), name_or_path};
  if (path_like) input_error("{} file '{}' not found", kind, name_or_path);
  const std::vector<std::string> known = catalog_names(files);
  input_error("unknown {} '{}' (did you mean: {}?); known {}s: {}{}", kind, name_or_path,
              join_names(closest_names(name_or_path, known)), kind, join_names(known), hint);
}

}  // namespace strata::costmodel::detail
