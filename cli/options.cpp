#include "cli/options.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "common/errors.h"
#include "costmodel/device_profile.h"
#include "planner/plan.h"
#include "planner/stack_support.h"
#include "planner/strategy.h"

namespace strata::cli {

void add_model_cluster_flags(CLI::App& cmd, ModelClusterFlags& f) {
  f.model_opt = cmd.add_option("--model,-m", f.model,
                               "catalog name (see `strata models`) or a .yaml / HF config.json "
                               "path")
                    ->capture_default_str();
  f.cluster_opt = cmd.add_option("--cluster,-c", f.cluster,
                                 "catalog name (see `strata clusters`) or a cluster .yaml path")
                      ->capture_default_str();
  cmd.add_option("--profile", f.profile,
                 "device profile (.yaml from `strata calibrate`, or a catalog name) replacing "
                 "the cluster's device");
  cmd.add_option("--stack", f.stack,
                 "software stack the job runs under: catalog name (see `strata stacks`) or a "
                 "stack .yaml path (default: the newest catalog stack; strata-cpu on CPU ranks)");
  add_positive<std::int64_t>(cmd, "--seq", f.seq, "sequence length (default: the model's)",
                             std::int64_t{1} << 24);
  cmd.add_option("--precision", f.precision,
                 "GEMM precision in place of the stack's: bf16, fp16, or fp8 (the transformer "
                 "layers' linear GEMMs in FP8 as Transformer Engine runs them; attention, LM head "
                 "and optimizer stay bf16/fp32; needs a device with an fp8 peak: H100, H200)")
      ->check(CLI::IsMember({"bf16", "fp16", "fp8"}));
}

std::vector<PathFlag> model_cluster_inputs(const ModelClusterFlags& f) {
  return {{f.model, "--model"}, {f.cluster, "--cluster"}, {f.profile, "--profile"}, {f.stack, "--stack"}};
}

CatalogCommand add_catalog_command(CLI::App& app, const std::string& name, const std::string& help,
                                   const std::string& show_help, const std::string& item_help,
                                   std::function<std::string(const std::string& format)> list) {
  CatalogCommand c;
  auto* cmd = app.add_subcommand(name, help);
  add_format_flag(*cmd, *c.format);
  c.show = cmd->add_subcommand("show", show_help);
  c.show->add_option("name", *c.item, item_help)->required();
  cmd->callback([show = c.show, format = c.format, list = std::move(list)] {
    if (!show->parsed()) print_stdout(list(*format));
  });
  return c;
}

models::ModelSpec load_model_flag(const ModelClusterFlags& f, std::vector<std::string>* defaults) {
  models::ModelSpec m = prefixed("--model", [&] { return planner::load_model_or_plan(f.model); });
  if (f.seq > 0) return prefixed("--seq", [&] { return models::with_seq_len(m, f.seq); });
  std::error_code ec;
  const bool hf_config = (f.model.size() >= 5 && f.model.ends_with(".json")) ||
                         std::filesystem::is_directory(f.model, ec);
  if (hf_config && m.seq_len > kDefaultHfTrainingSeq) {
    if (defaults)
      defaults->push_back(fmt::format(
          "seq {} (config.json max_position_embeddings {} is the longest supported context, not "
          "the training sequence; set it with --seq)",
          kDefaultHfTrainingSeq, m.seq_len));
    m = models::with_seq_len(m, kDefaultHfTrainingSeq);
  }
  return m;
}

costmodel::ClusterSpec load_cluster_flag(const ModelClusterFlags& f) {
  costmodel::ClusterSpec c =
      prefixed("--cluster", [&] { return costmodel::load_cluster(f.cluster); });
  if (!f.profile.empty()) {
    costmodel::DeviceProfile measured =
        prefixed("--profile", [&] { return costmodel::load_device_profile(f.profile); });
    prefixed("--profile", [&] {
      costmodel::apply_profile(c, measured, f.profile);
      return 0;
    });
  }
  return c;
}

int default_gpu_count(const ModelClusterFlags& f, const costmodel::ClusterSpec& cluster, std::string* note) {
  const long long total = cluster.total_gpus();
  const std::vector<std::string> catalog = costmodel::cluster_catalog_names();
  const bool from_catalog = std::find(catalog.begin(), catalog.end(), f.cluster) != catalog.end();
  const long long gpus = std::min<long long>(from_catalog ? std::min<long long>(total, kDefaultGpus) : total, INT_MAX);
  if (note)
    *note = gpus < total && f.cluster_given() ? fmt::format("{} GPUs (of {}'s {}; --gpus for another count)", gpus, cluster.name, total)
                         : fmt::format("{} GPUs", gpus);
  return static_cast<int>(gpus);
}

costmodel::SoftwareStack load_stack_flag(const ModelClusterFlags& f,
                                         const costmodel::ClusterSpec& cluster) {
  return prefixed("--stack", [&] {
    return costmodel::load_software_stack(
        f.stack.empty() ? costmodel::default_software_stack_name(cluster.device) : f.stack);
  });
}

costmodel::SoftwareStack stack_for_job(const ModelClusterFlags& f, const costmodel::ClusterSpec& cluster,
                                       const planner::Strategy& job, std::vector<std::string>& notes) {
  costmodel::SoftwareStack base = load_stack_flag(f, cluster);
  if (const std::string why = f.stack.empty() ? planner::stack_refusal(job, base) : ""; !why.empty()) {
    base = costmodel::load_software_stack(costmodel::default_software_stack_name(costmodel::DeviceProfile{}));
    notes.push_back(fmt::format("the device's default stack cannot run this job ({}); using {} (--stack picks another)",
                                why, base.name));
  }
  return base;
}

void add_files_help(CLI::App& cmd, const std::string& reads, const std::string& writes) {
  const std::string footer = cmd.get_footer();
  cmd.footer((footer.empty() ? "" : footer + "\n") +
             fmt::format("Files: reads {}; writes {}. An output that is the same file as an input, or "
                         "as another output, is refused.",
                         reads, writes));
}

std::string plan_for_stdout(const planner::Plan& plan, const std::string& format) {
  return format == "json" ? planner::plan_to_json(plan) + "\n" : planner::plan_to_yaml(plan);
}

void add_train_target_flags(CLI::App& cmd, TrainTargetFlags& f) {
  const char* g = "Time to train";
  f.tokens_opt = cmd.add_option("--train-tokens", f.tokens,
                                "tokens to train on (e.g. 15T, 300B, 2.5e12): adds the steps, "
                                "wall days, GPU-hours (and cost) of the run, each with its range")
                     ->group(g);
  f.price_opt = cmd.add_option("--gpu-hour-price", f.price,
                               "USD per GPU-hour (with --train-tokens): adds the cost")
                    ->group(g);
  f.goodput_opt = cmd.add_option("--goodput", f.goodput,
                                 "share of wall time spent in productive training steps, 0 < F "
                                 "<= 1 (restarts, checkpoints, evaluation; default 1)")
                      ->group(g);
}

report::TrainingTarget load_train_target(const TrainTargetFlags& f) {
  const auto given = [](const CLI::Option* o, const std::string& text) {
    return o && o->count() > 0 ? std::optional<std::string>(text) : std::nullopt;
  };
  return report::training_target(given(f.tokens_opt, f.tokens), given(f.price_opt, f.price),
                                 given(f.goodput_opt, f.goodput));
}

void check_plan_on_stdout_format(const std::string& out, const CLI::Option* format_opt, const std::string& format) {
  if (out != "-" || !format_opt || format_opt->count() == 0 || format == "json" || format == "yaml") return;
  input_error("--out - prints the plan file (YAML, or JSON with --format json), but --format {} asks for "
              "another output on stdout: drop one of them",
              format);
}

CLI::Option* add_format_flag(CLI::App& cmd, std::string& format, const std::vector<std::string>& names) {
  return cmd.add_option("--format,-f", format, "output format")
      ->check(CLI::IsMember(names))
      ->capture_default_str();
}

CLI::Option* add_explain_flag(CLI::App& cmd, bool& explain) {
  return cmd.add_flag("--explain", explain,
                      "print the # note: lines above the table in full, with their sources (default: one "
                      "short line each; JSON and YAML always hold them in full)");
}

std::vector<std::string> recompute_names() {
  using planner::Recompute;
  return {planner::to_string(Recompute::None), planner::to_string(Recompute::Selective),
          planner::to_string(Recompute::Full)};
}

std::vector<std::string> schedule_names() {
  using planner::ScheduleKind;
  return {planner::to_string(ScheduleKind::GPipe), planner::to_string(ScheduleKind::OneFOneB),
          planner::to_string(ScheduleKind::Interleaved)};
}

}  // namespace strata::cli
