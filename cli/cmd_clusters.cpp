// `strata clusters`: the built-in cluster catalog; `strata clusters show NAME` prints one.
#include <fmt/format.h>

#include "cli/commands.h"
#include "report/format_json.h"
#include "report/format_table.h"
#include "report/format_yaml.h"
#include "cli/options.h"
#include "cli/output.h"
#include "common/errors.h"
#include "costmodel/cluster_spec.h"

namespace strata::cli {

void add_clusters_command(CLI::App& app) {
  auto format = std::make_shared<std::string>("table");
  auto name = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("clusters", "List the built-in cluster catalog");
  add_format_flag(*cmd, *format);
  auto* show = cmd->add_subcommand("show", "Print one cluster's YAML (catalog name or file path)");
  show->add_option("name", *name, "catalog name or file path")->required();
  show->callback([name] {
    costmodel::ClusterSpec c;
    try {
      c = costmodel::load_cluster(*name);
    } catch (const InputError& e) {
      throw InputError(fmt::format("clusters show: {}", e.what()));
    }
    print_stdout(costmodel::to_yaml(c));
  });
  cmd->callback([format, show] {
    if (show->parsed()) return;
    std::vector<costmodel::ClusterSpec> clusters;
    for (const auto& n : costmodel::cluster_catalog_names())
      clusters.push_back(costmodel::load_cluster(n));
    if (*format == "json")
      print_stdout(format_clusters_json(clusters));
    else if (*format == "yaml")
      print_stdout(format_clusters_yaml(clusters));
    else
      print_stdout(format_clusters_table(clusters));
  });
}

}  // namespace strata::cli
