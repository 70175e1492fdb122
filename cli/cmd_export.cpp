// `strata export --plan plan.yaml --to megatron|deepspeed|megatron-deepspeed|torchtitan
// [--stack NAME|FILE] [--out FILE]`: the plan as a Megatron-LM launch command, a DeepSpeed
// config JSON, the Megatron-DeepSpeed arguments that go with it, or a TorchTitan TOML. The
// text comes from export/export_formats.h; files are written atomically, `-` is stdout.
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "common/errors.h"
#include "common/one_line.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "export/export_formats.h"
#include "planner/plan.h"

namespace strata::cli {

namespace {

struct ExportFlags {
  std::string plan;
  std::string to;
  std::string stack;
  std::string out = "-";
};

// --stack, else the stack the plan's prediction assumed, else the default stack of the
// plan's cluster device.
costmodel::SoftwareStack export_stack(const ExportFlags& f, const planner::Plan& plan) {
  return prefixed("--stack", [&] {
    return costmodel::load_software_stack(
        !f.stack.empty()                  ? f.stack
        : !plan.prediction.stack.empty() ? plan.prediction.stack
                                          : costmodel::default_software_stack_name(
                                                costmodel::load_cluster(plan.cluster).device));
  });
}

void run_export(const ExportFlags& f) {
  check_path_aliasing({{f.out, "--out"}}, {{f.plan, "--plan"}, {f.stack, "--stack"}});
  check_output_path(f.out, "--out");
  const ExportTarget target = export_target_from_string(f.to);
  const planner::Plan plan = prefixed("--plan", [&] { return planner::load_plan(f.plan); });
  // An FP8 plan needs FP8 tensor cores, as the simulator requires (an A100 has none): a
  // hand-edited plan file could carry fp8 onto such a cluster.
  if (plan.strategy.precision == "fp8") {
    costmodel::ClusterSpec cluster;
    try {
      cluster = costmodel::load_cluster(plan.cluster);
    } catch (const InputError& e) {
      throw InputError(fmt::format("--plan: strategy.precision fp8 needs the plan's cluster to "
                                   "check its device has FP8 tensor cores: {}", e.what()));
    }
    if (!cluster.device.peak_tflops.count(costmodel::DType::Fp8))
      input_error("--plan: strategy.precision fp8 needs FP8 tensor cores, but cluster '{}' has "
                  "device '{}' with no fp8 peak; plan with --precision bf16",
                  one_line(plan.cluster), one_line(cluster.device.name));
  }
  write_output(f.out, export_plan(plan, export_stack(f, plan), target), "--out");
  // A JSON config holds no comments: what DeepSpeed needs in model code goes to stderr.
  if (target == ExportTarget::DeepSpeed)
    if (const std::string note = exports::deepspeed_model_code_note(plan); !note.empty())
      warn(note);
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto flags = std::make_shared<ExportFlags>();
  auto* cmd = app.add_subcommand(
      "export",
      "Export a plan as a Megatron-LM launch command, a DeepSpeed config (+ Megatron-DeepSpeed "
      "arguments) or a TorchTitan TOML");
  cmd->footer(fmt::format("Checked against: {}; {}; {} with {}.", exports::kMegatronVersion,
                          exports::kTorchTitanVersion, exports::kDeepSpeedVersion,
                          exports::kMegatronDeepSpeedVersion));
  add_files_help(*cmd, "--plan, --stack (a file, or a catalog name)",
                 "--out (the launch command, config or TOML; - for stdout)");
  cmd->add_option("--plan", flags->plan, "Plan file written by `strata plan --out` (YAML)")
      ->required();
  cmd->add_option("--to", flags->to, "Target framework")
      ->required()
      ->check(CLI::IsMember(exports::export_target_names()));
  cmd->add_option("--stack", flags->stack,
                  "Software stack whose overlap/precision options to emit (default: the plan's)");
  cmd->add_option("--out", flags->out, "Output file (written atomically), or - for stdout")
      ->capture_default_str();
  cmd->callback([flags] { run_export(*flags); });
}

}  // namespace strata::cli
