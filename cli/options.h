// Flags shared by `strata plan` and `strata simulate`: which model, which cluster,
// which device profile, output format and files. Loading wraps library errors with the
// flag that supplied the value, so every `error:` line names the flag.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/errors.h"

#include "common/output_file.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "planner/plan.h"
#include "planner/strategy.h"
#include "report/time_to_train.h"

namespace strata::cli {

inline constexpr const char* kDefaultModel = "gpt3-175b";
inline constexpr const char* kDefaultCluster = "dgx-a100";
inline constexpr int kDefaultGpus = 1024;
inline constexpr std::int64_t kDefaultGlobalBatch = 1536;  // GPT-3 175B (Brown et al. 2020)

struct ModelClusterFlags {
  std::string model = kDefaultModel;
  std::string cluster = kDefaultCluster;
  std::string profile;   // device profile overriding the cluster's device (optional)
  std::int64_t seq = 0;  // 0: the model's own seq_len
  std::string stack;     // software stack (catalog name or file); empty: the device's default
  std::string precision; // bf16 | fp16 | fp8 in place of the stack's; empty: the stack's
  CLI::Option* model_opt = nullptr;
  CLI::Option* cluster_opt = nullptr;
  bool model_given() const { return model_opt && model_opt->count() > 0; }
  bool cluster_given() const { return cluster_opt && cluster_opt->count() > 0; }
};

void add_model_cluster_flags(CLI::App& cmd, ModelClusterFlags& flags);
// The files these flags read (--model, --cluster, --profile, --stack), for
// check_path_aliasing; catalog names among them match no output.
std::vector<PathFlag> model_cluster_inputs(const ModelClusterFlags& flags);
// Training sequence of a HuggingFace config.json when --seq is not given: its
// max_position_embeddings is the longest context the model supports (131072 for Llama 3.1),
// not the sequence it is trained on. 4096 is Llama 2's pre-training context (Touvron et al.
// 2023, "Llama 2", sec. 2.2); a user-visible default, stated in the output.
inline constexpr std::int64_t kDefaultHfTrainingSeq = 4096;
// --model (+ --seq): a catalog name, a model YAML, a Hugging Face config.json (or its
// folder), or a plan file (its model, so a plan can be re-planned elsewhere), read by
// planner::load_model_or_plan. A config.json without --seq trains at
// min(max_position_embeddings, kDefaultHfTrainingSeq); `defaults` (optional) then gets a
// line saying so.
models::ModelSpec load_model_flag(const ModelClusterFlags& flags,
                                  std::vector<std::string>* defaults = nullptr);
costmodel::ClusterSpec load_cluster_flag(const ModelClusterFlags& flags);
// GPUs a plan or a comparison takes when --gpus is not given. A cluster file describes the
// user's own cluster: all of it. A catalog cluster's size is a bound, not a job (dgx-h100 holds
// 16384 GPUs for the search benchmarks, dgx-a100 3200 for Narayanan et al.'s largest run), so
// it takes kDefaultGpus of them, or all when it has fewer. `note` (optional) gets the line the
// report prints ("1024 GPUs (of dgx-h100's 16384; --gpus for another count)" for a named
// catalog cluster, "1024 GPUs" when the cluster is the default one too).
int default_gpu_count(const ModelClusterFlags& flags, const costmodel::ClusterSpec& cluster,
                      std::string* note = nullptr);
// --stack, or the default stack of the cluster's device.
costmodel::SoftwareStack load_stack_flag(const ModelClusterFlags& flags,
                                         const costmodel::ClusterSpec& cluster);
// The stack an imported job runs under: --stack, else the device's default, else, when the
// job's own flags need a newer framework than that (say --sequence-parallel on A100,
// validated with Megatron-LM 2021), the newest catalog stack, said in `notes`.
costmodel::SoftwareStack stack_for_job(const ModelClusterFlags& flags, const costmodel::ClusterSpec& cluster,
                                       const planner::Strategy& job, std::vector<std::string>& notes);

// The command's files in one place, appended to its help footer: what it reads and what
// it writes (check_path_aliasing refuses an output that is one of the inputs or another
// output).
void add_files_help(CLI::App& cmd, const std::string& reads, const std::string& writes);

// What `--out -` prints: the plan file (YAML), or with --format json the plan as JSON
// (planner::plan_to_json), so stdout holds the format asked for.
std::string plan_for_stdout(const planner::Plan& plan, const std::string& format);

// --train-tokens N [--gpu-hour-price USD] [--goodput F] (plan, simulate, compare): kept as
// text and parsed by load_train_target, so every bad value is one error naming its flag.
struct TrainTargetFlags {
  std::string tokens, price, goodput;
  CLI::Option* tokens_opt = nullptr;
  CLI::Option* price_opt = nullptr;
  CLI::Option* goodput_opt = nullptr;
};
void add_train_target_flags(CLI::App& cmd, TrainTargetFlags& flags);
// tokens == 0 when --train-tokens is not given; --gpu-hour-price or --goodput without it is
// an InputError, as are a price <= 0 and a goodput outside (0, 1].
report::TrainingTarget load_train_target(const TrainTargetFlags& flags);

// --format table|json|yaml, or the formats named.
// `--out -` puts the plan file on stdout, as YAML or (--format json) JSON: an explicit
// --format that is neither (table, csv) asked for another output, refused by name rather
// than answered with YAML.
void check_plan_on_stdout_format(const std::string& out, const CLI::Option* format_opt, const std::string& format);

CLI::Option* add_format_flag(CLI::App& cmd, std::string& format,
                             const std::vector<std::string>& names = {"table", "json", "yaml"});
// --explain: the `# note:` lines above the table in full, with their sources.
CLI::Option* add_explain_flag(CLI::App& cmd, bool& explain);
// Accepted spellings, taken from the planner so the CLI and plan files agree.
std::vector<std::string> recompute_names();
std::vector<std::string> schedule_names();

// For file and folder flags: an empty value (`--out ""`) is refused by name instead of
// meaning "not given".
inline CLI::Validator non_empty_path() {
  return CLI::Validator(
      [](std::string& s) { return s.empty() ? std::string("expected a path, got an empty string") : std::string(); },
      "");
}

// Runs `load`; an InputError it throws comes out with `what: ` in front, so the `error:`
// line names the flag or command that supplied the value ("--plan: ...", "models show: ...").
template <typename F>
auto prefixed(const std::string& what, F&& load) -> decltype(load()) {
  try {
    return load();
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", what, e.what()));
  }
}

// `strata NAME [--format table|json|yaml]` lists a catalog, `strata NAME show ITEM` prints
// one entry. add_catalog_command registers both with their flags and the list callback;
// the caller adds show's own flags and callback.
struct CatalogCommand {
  CLI::App* show = nullptr;
  std::shared_ptr<std::string> format = std::make_shared<std::string>("table");
  std::shared_ptr<std::string> item = std::make_shared<std::string>();  // show's ITEM
};
CatalogCommand add_catalog_command(CLI::App& app, const std::string& name, const std::string& help,
                                   const std::string& show_help, const std::string& item_help,
                                   std::function<std::string(const std::string& format)> list);

// Positive integer flag with an upper bound; CLI11 names the flag on violation.
template <typename T>
CLI::Option* add_positive(CLI::App& cmd, const std::string& name, T& value, const std::string& help,
                          T max) {
  return cmd.add_option(name, value, help)->check(CLI::Range(T{1}, max));
}

}  // namespace strata::cli
