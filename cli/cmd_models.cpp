// `strata models`: the built-in model catalog; `strata models show NAME` prints one spec.
#include <fmt/format.h>

#include "cli/commands.h"
#include "report/format_json.h"
#include "report/format_table.h"
#include "report/format_yaml.h"
#include "cli/options.h"
#include "common/output_file.h"
#include "common/errors.h"
#include "models/catalog.h"
#include "models/model_graph.h"
#include "models/model_spec.h"
#include "models/model_stats.h"

namespace strata::cli {

namespace {

ModelRow model_row(models::ModelSpec spec) {
  ModelRow r;
  const auto graph = models::ModelGraph::build(spec, 1);
  r.params = graph.total_params();
  r.params_active = graph.active_params();
  r.params_mtp = models::mtp_params(spec);
  r.params_active_mtp = models::active_params(spec) - models::main_model_active_params(spec);
  r.spec = std::move(spec);
  return r;
}

// A model trained with multi-token prediction: its counts with and without the MTP
// depths, as a YAML comment (the published counts are usually without).
std::string mtp_counts(const models::ModelSpec& spec) {
  if (spec.mtp_layers == 0) return "";
  const double mtp = models::mtp_params(spec), total = models::total_params(spec);
  const double active = models::active_params(spec), main_active = models::main_model_active_params(spec);
  return fmt::format("# parameters: {:.2f}B with the {} MTP depth(s) ({:.2f}B of their own), {:.2f}B without; "
                     "active per token {:.2f}B with, {:.2f}B without\n",
                     total / 1e9, spec.mtp_layers, mtp / 1e9, (total - mtp) / 1e9, active / 1e9, main_active / 1e9);
}

std::vector<ModelRow> catalog_rows() {
  std::vector<ModelRow> rows;
  for (const auto& e : models::model_catalog())
    rows.push_back(model_row(models::parse_model_yaml(e.yaml, "catalog:" + e.name)));
  return rows;
}

void show_model(const std::string& name, const std::string& format) {
  if (format == "json") {
    print_stdout(format_model_json(model_row(prefixed("models show", [&] { return planner::load_model_or_plan(name); }))));
    return;
  }
  if (auto text = models::find_catalog_model(name)) {
    print_stdout(*text + mtp_counts(models::load_model(name)));
    return;
  }
  // Not a catalog name: a file path, or a typo (the error suggests close names).
  const models::ModelSpec spec = prefixed("models show", [&] { return planner::load_model_or_plan(name); });
  print_stdout(models::to_yaml(spec) + mtp_counts(spec));
}

}  // namespace

void add_models_command(CLI::App& app) {
  const CatalogCommand c = add_catalog_command(
      app, "models", "List the built-in model catalog",
      "Print one model's YAML (catalog name or file path); --format json adds params_total and params_active",
      "catalog name or file path", [](const std::string& format) {
        const auto rows = catalog_rows();
        return format == "json"   ? format_models_json(rows)
               : format == "yaml" ? format_models_yaml(rows)
                                  : format_models_table(rows);
      });
  auto show_format = std::make_shared<std::string>("yaml");
  c.show->add_option("--format,-f", *show_format, "output format")
      ->check(CLI::IsMember({"yaml", "json"}))
      ->capture_default_str();
  c.show->callback([name = c.item, show_format] { show_model(*name, *show_format); });
}

}  // namespace strata::cli
