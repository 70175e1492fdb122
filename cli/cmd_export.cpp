// `strata export --plan plan.yaml --to megatron|deepspeed|torchtitan [--out FILE]`: the plan
// as Megatron-LM launch arguments, a DeepSpeed config JSON or a TorchTitan TOML fragment.
// The text comes from cli/export_formats.h; files are written atomically, `-` is stdout.
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "export/export_formats.h"
#include "cli/output.h"
#include "common/errors.h"
#include "planner/plan.h"

namespace strata::cli {

namespace {

struct ExportFlags {
  std::string plan;
  std::string to;
  std::string out = "-";
};

void run_export(const ExportFlags& f) {
  check_output_path(f.out, "--out");
  const ExportTarget target = export_target_from_string(f.to);
  planner::Plan plan;
  try {
    plan = planner::load_plan(f.plan);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--plan: {}", e.what()));
  }
  // The exports carry no FP8 settings yet: refuse rather than write a bf16 job silently.
  if (plan.strategy.precision == "fp8")
    input_error("--plan: strategy.precision fp8 is not exported yet (the {} export has no FP8 "
                "settings); remove the key to export the same layout in the stack's precision",
                f.to);
  write_output(f.out, export_plan(plan, target), "--out");
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto flags = std::make_shared<ExportFlags>();
  auto* cmd = app.add_subcommand(
      "export", "Export a plan to Megatron-LM arguments, a DeepSpeed config or TorchTitan TOML");
  cmd->add_option("--plan", flags->plan, "Plan file written by `strata plan --out` (YAML)")
      ->required();
  cmd->add_option("--to", flags->to, "Target framework")
      ->required()
      ->check(CLI::IsMember(export_target_names()));
  cmd->add_option("--out", flags->out, "Output file (written atomically), or - for stdout")
      ->capture_default_str();
  cmd->callback([flags] { run_export(*flags); });
}

}  // namespace strata::cli
