// Shared by the strata YAML reader (model_spec.cpp) and the HuggingFace config.json reader
// (hf_config.cpp): the consistency rules of a ModelSpec, as (field, rule) so each reader
// can name the field in its own terms (YAML line and key path, or the config.json key).
#pragma once
#include <optional>
#include <string>

#include "models/model_spec.h"

namespace strata::models::detail {

// One broken rule: the field it is about and the rest of the sentence
// ("(0) must be > 0"), so callers can prefix the field with a file and line.
struct Violation {
  std::string field;
  std::string rule;
};

// The first rule `m` breaks, if any (the rules of validate()).
std::optional<Violation> check_spec(const ModelSpec& m);

// The file name without folder and extension ("a/b/x.yaml" -> "x"); `path` itself when empty.
std::string file_stem(const std::string& path);

}  // namespace strata::models::detail
