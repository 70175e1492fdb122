// Plan -> Megatron-LM / DeepSpeed (+ Megatron-DeepSpeed) / TorchTitan: the export targets and
// the dispatch to each framework's file (export_megatron.cpp, export_deepspeed.cpp,
// export_torchtitan.cpp; what they share is export_common.h). Every name used is in the
// framework's table under export/frameworks/ (repository, commit and files in each table's
// header); tests/export/framework_names_test.cpp checks each output against it.
#include "export/export_formats.h"

#include "common/errors.h"
#include "export/safe_text.h"

namespace strata::exports {

using costmodel::SoftwareStack;
using planner::Plan;

ExportTarget export_target_from_string(const std::string& s) {
  if (s == "megatron") return ExportTarget::Megatron;
  if (s == "deepspeed") return ExportTarget::DeepSpeed;
  if (s == "megatron-deepspeed") return ExportTarget::MegatronDeepSpeed;
  if (s == "torchtitan") return ExportTarget::TorchTitan;
  input_error("--to '{}' is not one of: megatron, deepspeed, megatron-deepspeed, torchtitan",
              one_line(s));
}

const char* to_string(ExportTarget t) {
  switch (t) {
    case ExportTarget::Megatron: return "megatron";
    case ExportTarget::DeepSpeed: return "deepspeed";
    case ExportTarget::MegatronDeepSpeed: return "megatron-deepspeed";
    case ExportTarget::TorchTitan: return "torchtitan";
  }
  return "?";
}

std::vector<std::string> export_target_names() {
  return {"megatron", "deepspeed", "megatron-deepspeed", "torchtitan"};
}

std::string export_plan(const Plan& p, const SoftwareStack& stack, ExportTarget t,
                        const ExportOptions& opt) {
  switch (t) {
    case ExportTarget::Megatron: return export_megatron(p, stack, opt);
    case ExportTarget::DeepSpeed:
      // A config JSON: no command to launch, and the iterations are the training loop's.
      if (opt.launcher == Launcher::Slurm)
        input_error("--launcher slurm: --to deepspeed writes a DeepSpeed config, not a command; "
                    "use --to megatron-deepspeed for a Slurm script that writes it and launches "
                    "Megatron-DeepSpeed");
      return export_deepspeed(p, stack);
    case ExportTarget::MegatronDeepSpeed: return export_megatron_deepspeed(p, stack, opt);
    case ExportTarget::TorchTitan: return export_torchtitan(p, stack, opt);
  }
  STRATA_CHECK(false, "unknown export target");
  return {};
}

}  // namespace strata::exports
