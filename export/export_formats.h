// Exports of a plan to the frameworks people already run: a Megatron-LM launch command, a
// DeepSpeed config JSON with the Megatron-DeepSpeed arguments for its model-parallel half,
// and a TorchTitan v0.2.2 job-config TOML. Pure functions (Plan, SoftwareStack) -> text;
// `strata export` (cli/cmd_export.cpp) writes the text. Every flag or key emitted is listed,
// with its type, in the framework's name table (export/frameworks/*.yaml, extracted from the
// framework's code at a pinned commit); tests/export checks each output against its table.
// Where a framework cannot express part of the plan the output says so in a comment.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/software_stack.h"
#include "planner/plan.h"

namespace strata::exports {

enum class ExportTarget { Megatron, DeepSpeed, MegatronDeepSpeed, TorchTitan };

// "megatron" | "deepspeed" | "megatron-deepspeed" | "torchtitan"; InputError names --to.
ExportTarget export_target_from_string(const std::string& s);
const char* to_string(ExportTarget t);
std::vector<std::string> export_target_names();

// The framework versions the exports were checked against (README "Exports").
inline constexpr const char* kMegatronVersion = "Megatron-LM main d98e8a64 (2026-08-22)";
inline constexpr const char* kTorchTitanVersion = "TorchTitan v0.2.2";
inline constexpr const char* kDeepSpeedVersion = "DeepSpeed v0.19.5";
inline constexpr const char* kMegatronDeepSpeedVersion = "Megatron-DeepSpeed main 4efb479d";

// One command-line argument: flag and value ("" for a flag that takes none).
using Arg = std::pair<std::string, std::string>;

// How the exported command is started (`strata export --launcher`): torchrun (one line on
// one node; on several, a script each node runs, with c10d rendezvous at $MASTER_ADDR), or a
// Slurm batch script (sbatch: the plan's nodes, torchrun's c10d
// rendezvous on the first node, srun on all of them; export/launch.h).
enum class Launcher { Torchrun, Slurm };
// "torchrun" | "slurm"; InputError names --launcher.
Launcher launcher_from_string(const std::string& s);
std::vector<std::string> launcher_names();

// What an export writes beyond the plan itself.
struct ExportOptions {
  // Tokens the run trains on (`--train-tokens`): written as the iterations that cover them,
  // ceil(tokens / (global batch x seq_len)) (Megatron-LM --train-iters, TorchTitan [training]
  // steps). 0: no iteration count written.
  std::int64_t train_tokens = 0;
  Launcher launcher = Launcher::Torchrun;
  // GPUs per node of the plan's cluster; 0: 8 when that divides the plan's GPUs.
  int gpus_per_node = 0;
};
// ceil(tokens / (global_batch x seq_len)) for tokens >= 1: at least one iteration.
std::int64_t train_iterations(const planner::Plan& p, std::int64_t tokens);

// Megatron-LM pretrain_gpt.py arguments reproducing the plan under the stack: model shape
// (with MoE and multi-latent attention), precision (the plan's strategy.precision over the
// stack's; fp8 as Transformer Engine's delayed-scaling hybrid recipe), every parallel
// dimension (expert parallel and expert tensor parallel included), batch, recompute,
// distributed optimizer and the stack's overlap options. The one table from plan fields to
// Megatron flags; the import (export/import_megatron.h) reads the same flags back.
// InputError for what Megatron-LM cannot run (MoE with linear biases and etp > 1).
std::vector<Arg> megatron_args(const planner::Plan& p, const costmodel::SoftwareStack& stack,
                               const ExportOptions& opt = {});
// Megatron-FSDP's --data-parallel-sharding-strategy for ZeRO stage 0..3: no_shard, optim,
// optim_grads, optim_grads_params (Megatron-LM megatron/training/arguments.py choices at the
// pinned commit of export/frameworks/megatron_args.yaml).
const char* megatron_sharding_strategy(int zero);
// The inverse: the ZeRO stage of a sharding strategy, -1 for a name that is none of them.
int zero_from_megatron_sharding_strategy(const std::string& s);
// The launch command: comment header, `torchrun ... pretrain_gpt.py` and one argument per
// line with shell continuations.
std::string export_megatron(const planner::Plan& p, const costmodel::SoftwareStack& stack,
                            const ExportOptions& opt = {});
// DeepSpeed config JSON: batch sizes (train = micro x accumulation x dp), the plan's ZeRO
// stage, precision, fp32 gradient accumulation, pipeline stages and activation
// checkpointing; only keys DeepSpeed reads. InputError for what DeepSpeed cannot run as
// planned: context parallelism (its config has none), ZeRO-2/3 with pipeline parallelism,
// FP8 (no config key), and MoE its layer cannot express (sigmoid router, shared experts, ep
// not dividing dp, etp other than 1 with tp 1 or tp). The experts themselves are model code
// (deepspeed_model_code_note).
std::string export_deepspeed(const planner::Plan& p, const costmodel::SoftwareStack& stack);
// Megatron-DeepSpeed pretrain_gpt.py arguments (model shape, tp, pp, batch, recompute,
// --deepspeed --deepspeed_config ds_config.json --zero-stage), after a comment header with
// what DeepSpeed cannot express. InputError also for multi-latent attention, multi-token
// prediction, per-head Q and K norms, leading dense blocks and experts narrower than the dense
// MLP (no arguments).
std::vector<Arg> megatron_deepspeed_args(const planner::Plan& p,
                                         const costmodel::SoftwareStack& stack,
                                         const ExportOptions& opt = {});
std::string export_megatron_deepspeed(const planner::Plan& p,
                                      const costmodel::SoftwareStack& stack,
                                      const ExportOptions& opt = {});
// What a DeepSpeed job must set in model code because DeepSpeed's config has no key for it:
// the MoE layer (deepspeed.moe.layer.MoE with num_experts, ep_size, k, ...) of an MoE plan,
// multi-latent attention and multi-token prediction (no DeepSpeed module: the job's own
// code); "" for a plain dense plan. `strata export --to deepspeed` prints it beside the JSON.
std::string deepspeed_model_code_note(const planner::Plan& p);
// A ZeRO-3 plan predicted with a stack that gathers parameters a block at a time (FSDP units)
// runs differently under DeepSpeed, whose stage 3 gathers module by module: the warning that
// says so and names the stacks that predict it; "" when the plan is not ZeRO-3 or its stack
// already gathers by module.
std::string deepspeed_zero3_gather_note(const planner::Plan& p, const costmodel::SoftwareStack& stack);
// TorchTitan v0.2.2 job-config TOML: [training], [parallelism] (FSDP shard / DDP replicate
// degree from the ZeRO stage, context parallel degree and K/V rotation, expert parallel and
// expert tensor parallel degrees, module_fqns_per_model_part for the stage map),
// [activation_checkpoint]; for fp8 the float8 converter ([model] converters,
// [quantize.linear.float8]) with torch.compile. InputError for an MoE capacity factor
// (TorchTitan's MoE is dropless), etp other than 1 or tp (other than tp without ep), and
// multi-token prediction (no module in v0.2.2).
std::string export_torchtitan(const planner::Plan& p, const costmodel::SoftwareStack& stack,
                              const ExportOptions& opt = {});

// The export for target `t`. A Slurm launcher with --to deepspeed (a config, no command) is
// an InputError naming --launcher.
std::string export_plan(const planner::Plan& p, const costmodel::SoftwareStack& stack,
                        ExportTarget t, const ExportOptions& opt = {});

// Megatron-LM --pipeline-model-parallel-layout string for the plan's stage map:
// virtual stages in Megatron order separated by '|', E = embedding, t = decoder layer,
// m = multi-token-prediction block (model.mtp_layers, beside the loss), L = loss (final norm
// + output layer); e.g. "E,t*3|t*4|t*4|t*3,L", "E,t*3|t*4|t*4|t*3,m,L" with one MTP block.
std::string megatron_layout(const planner::Plan& p);
// TorchTitan module names per virtual stage (tok_embeddings, layers.<i>, norm, output).
std::vector<std::vector<std::string>> torchtitan_module_fqns(const planner::Plan& p);

}  // namespace strata::exports
