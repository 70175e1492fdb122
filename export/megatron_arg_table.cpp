#include "export/megatron_arg_table.h"

#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace strata::exports {

namespace detail {
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_framework_tables();
}  // namespace detail

namespace {

struct ArgTable {
  std::map<std::string, MegatronArity> arity;
  std::string commit;
};

// The table's type names (see the file's header): flag, int, float, str, other, list[...].
MegatronArity arity_of(const std::string& type) {
  if (type == "flag") return MegatronArity::None;
  if (type.rfind("list", 0) == 0) return MegatronArity::Many;
  return MegatronArity::One;
}

const ArgTable& table() {
  static const ArgTable t = [] {
    ArgTable out;
    for (const auto& [stem, text] : detail::embedded_framework_tables()) {
      if (stem != "megatron_args") continue;
      const YAML::Node root = YAML::Load(std::string(text));
      out.commit = root["source"]["commit"].as<std::string>();
      for (const auto& kv : root["args"]) out.arity[kv.first.as<std::string>()] = arity_of(kv.second.as<std::string>());
    }
    return out;
  }();
  return t;
}

}  // namespace

std::optional<MegatronArity> megatron_arg_arity(const std::string& flag) {
  const auto it = table().arity.find(flag);
  if (it == table().arity.end()) return std::nullopt;
  return it->second;
}

const std::string& megatron_arg_table_commit() { return table().commit; }

}  // namespace strata::exports
