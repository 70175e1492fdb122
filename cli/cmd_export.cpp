// `strata export --plan plan.yaml --to megatron|deepspeed|megatron-deepspeed|torchtitan
// [--stack NAME|FILE] [--out FILE] [--train-tokens N] [--launcher torchrun|slurm]
// [--from JOB.sh]`: the plan as a Megatron-LM launch command, a DeepSpeed config JSON, the
// Megatron-DeepSpeed arguments that go with it, or a TorchTitan TOML; with --launcher slurm
// an sbatch script; with --from the user's own Megatron-LM script with the plan's parallel
// flags (export/megatron_script_patch.h). The text comes from export/; files are written
// atomically, `-` is stdout.
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "common/output_file.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/one_line.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "export/export_formats.h"
#include "export/megatron_script_patch.h"
#include "planner/plan.h"
#include "report/time_to_train.h"

namespace strata::cli {

namespace {

struct ExportFlags {
  std::string plan;
  std::string to;
  std::string stack;
  std::string out = "-";
  std::string train_tokens;  // text: parsed by report::parse_token_count, errors name the flag
  std::string launcher = "torchrun";
  bool train_tokens_given = false;  // --train-tokens "" is refused, not "not given"
  std::string from;                 // the user's Megatron-LM launch script to patch
};

// --train-tokens and --launcher as the export library takes them; the launch script's node
// shape comes from the plan's cluster.
exports::ExportOptions export_options(const ExportFlags& f, const planner::Plan& plan) {
  exports::ExportOptions opt;
  opt.launcher = exports::launcher_from_string(f.launcher);
  if (f.train_tokens_given) {
    try {
      opt.train_tokens = report::parse_token_count(f.train_tokens);
    } catch (const InputError& e) {
      throw InputError(fmt::format("--train-tokens: {}", e.what()));
    }
  }
  try {
    opt.gpus_per_node = costmodel::load_cluster(plan.cluster).gpus_per_node;
  } catch (const InputError& e) {
    // torchrun without the cluster keeps 8 GPUs per node; an sbatch script needs the real shape.
    if (opt.launcher == exports::Launcher::Slurm)
      throw InputError(fmt::format("--launcher slurm needs the plan's cluster for its GPUs per "
                                   "node: {}", e.what()));
  }
  return opt;
}

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

// --from: the user's script with the plan's parallel flags; the changes go to stderr.
std::string patched_script(const ExportFlags& f, const planner::Plan& plan,
                           const costmodel::SoftwareStack& stack, const exports::ExportOptions& opt) {
  if (opt.launcher == exports::Launcher::Slurm)
    input_error("--from patches your own script, which keeps its launcher: leave out --launcher slurm");
  std::string script;
  try {
    script = read_file(f.from);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--from: {}", e.what()));
  }
  const exports::ScriptPatch patch =
      exports::patch_megatron_script(script, f.from, exports::megatron_args(plan, stack, opt));
  std::string diff = patch.changes.empty() ? "--from: the script already has the plan's parallel flags"
                                           : "--from: the plan's parallel flags:";
  for (const auto& c : patch.changes) diff += "\n  " + c;
  warn(fmt::format("{}\nthe plan runs on {} GPUs (dp {} x tp {} x pp {} x cp {}): the script's "
                   "launcher (nodes x GPUs per node) is left as written",
                   diff, plan.strategy.gpus(), plan.strategy.dp, plan.strategy.tp, plan.strategy.pp,
                   plan.strategy.cp));
  // The last line names the tool, so a later export may replace this file (common/output_file.h).
  std::string text = patch.text;
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text + "# parallel flags set by strata export --plan " + one_line(f.plan) + "\n";
}

void run_export(const ExportFlags& f) {
  check_path_aliasing({{f.out, "--out"}},
                      {{f.plan, "--plan"}, {f.stack, "--stack"}, {f.from, "--from"}});
  const ExportTarget target = export_target_from_string(f.to);
  // A DeepSpeed config is JSON without comments: its own key marks a file it may replace.
  const char* own_marker = target == ExportTarget::DeepSpeed ? "\"train_micro_batch_size_per_gpu\"" : nullptr;
  check_output_path(f.out, "--out", own_marker);
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
  const exports::ExportOptions opt = export_options(f, plan);
  if (!f.from.empty()) {
    if (target != ExportTarget::Megatron)
      input_error("--from patches a Megatron-LM launch script: use it with --to megatron");
    write_output(f.out, patched_script(f, plan, export_stack(f, plan), opt), "--out");
    return;
  }
  write_output(f.out, export_plan(plan, export_stack(f, plan), target, opt), "--out", own_marker);
  // A JSON config holds no comments: what DeepSpeed needs in model code goes to stderr.
  if (target == ExportTarget::DeepSpeed) {
    if (const std::string note = exports::deepspeed_model_code_note(plan); !note.empty())
      warn(note);
    const std::string gathers = exports::deepspeed_zero3_gather_note(plan, export_stack(f, plan));
    if (!gathers.empty()) warn(gathers);
    if (opt.train_tokens > 0)
      warn(fmt::format("DeepSpeed's config holds no iteration count: run the training loop for "
                       "{} steps (ceil({} tokens / (global batch {} x seq_len {})))",
                       exports::train_iterations(plan, opt.train_tokens), opt.train_tokens,
                       plan.strategy.global_batch, plan.model.seq_len));
  }
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
  add_files_help(*cmd, "--plan, --stack (a file, or a catalog name), --from (your Megatron-LM script)",
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
  cmd->add_option_function<std::string>(
      "--train-tokens",
      [flags](const std::string& v) {
        flags->train_tokens = v;
        flags->train_tokens_given = true;
      },
      "tokens to train on (e.g. 15T, 300B): writes the iterations that cover them (Megatron "
      "--train-iters, TorchTitan training.steps)");
  cmd->add_option("--from", flags->from,
                  "your Megatron-LM launch script: print it with only its parallel flags (tp, pp, "
                  "vpp, cp, ep, etp, sp, batch, recompute, optimizer sharding, overlaps) set to "
                  "the plan's; the changes go to stderr")
      ->check(non_empty_path());
  cmd->add_option("--launcher", flags->launcher,
                  "torchrun: one command on one node, on several a script each node runs (c10d "
                  "rendezvous at $MASTER_ADDR); slurm: an sbatch script (nodes from the plan's "
                  "cluster, torchrun c10d rendezvous, srun)")
      ->capture_default_str()
      ->check(CLI::IsMember(exports::launcher_names()));
  cmd->callback([flags] { run_export(*flags); });
}

}  // namespace strata::cli
