// `strata clusters`: the built-in cluster catalog; `strata clusters show NAME` prints one.
#include <fmt/format.h>

#include "cli/commands.h"
#include "report/format_json.h"
#include "report/format_table.h"
#include "report/format_yaml.h"
#include "cli/options.h"
#include "common/output_file.h"
#include "common/errors.h"
#include "costmodel/cluster_spec.h"

namespace strata::cli {

void add_clusters_command(CLI::App& app) {
  const CatalogCommand c = add_catalog_command(
      app, "clusters", "List the built-in cluster catalog", "Print one cluster's YAML (catalog name or file path)",
      "catalog name or file path", [](const std::string& format) {
        std::vector<costmodel::ClusterSpec> clusters;
        for (const auto& n : costmodel::cluster_catalog_names()) clusters.push_back(costmodel::load_cluster(n));
        return format == "json"   ? format_clusters_json(clusters)
               : format == "yaml" ? format_clusters_yaml(clusters)
                                  : format_clusters_table(clusters);
      });
  c.show->callback([name = c.item] {
    print_stdout(costmodel::to_yaml(prefixed("clusters show", [&] { return costmodel::load_cluster(*name); })));
  });
}

}  // namespace strata::cli
