#include "cli/options.h"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include <yaml-cpp/yaml.h>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "costmodel/device_profile.h"
#include "planner/plan.h"
#include "planner/strategy.h"
#include "planner/trace_bounds.h"

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

namespace {
bool is_plan_file(const std::string& path) {
  if (!(path.ends_with(".yaml") || path.ends_with(".yml"))) return false;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  try {
    const YAML::Node n = YAML::Load(read_file(path));
    return n.IsMap() && n["model"] && n["model"].IsMap() && n["strategy"] && n["strategy"].IsMap();
  } catch (const std::exception&) {
    return false;  // not YAML: load_model says why
  }
}
}  // namespace

models::ModelSpec load_model_or_plan(const std::string& name_or_path) {
  return is_plan_file(name_or_path) ? planner::load_plan(name_or_path).model : models::load_model(name_or_path);
}

models::ModelSpec load_model_flag(const ModelClusterFlags& f, std::vector<std::string>* defaults) {
  models::ModelSpec m = prefixed("--model", [&] { return load_model_or_plan(f.model); });
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

costmodel::SoftwareStack load_stack_flag(const ModelClusterFlags& f,
                                         const costmodel::ClusterSpec& cluster) {
  return prefixed("--stack", [&] {
    return costmodel::load_software_stack(
        f.stack.empty() ? costmodel::default_software_stack_name(cluster.device) : f.stack);
  });
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

void check_trace_bound(const planner::Strategy& s, const char* flag) {
  const double events = planner::trace_event_estimate(s);
  const double bytes = events * planner::kTraceJsonBytesPerEvent;
  if (bytes <= planner::kMaxTraceBytes) return;
  input_error("{}: the trace of this strategy would hold about {:.0f} events (~{:.0f} MB written, "
              "~{:.1f} GB of memory while it is built), over the {:.0f} MB bound; it grows with the "
              "micro-batches per step ({} = global batch {} / (micro-batch {} x dp {})) times the "
              "pipeline stages (pp {} x vpp {}): use a smaller --global-batch or a larger "
              "--micro-batch, or leave out {}",
              flag, events, bytes / 1e6, events * planner::kTraceMemoryBytesPerEvent / 1e9,
              planner::kMaxTraceBytes / 1e6, s.num_microbatches(), s.global_batch, s.micro_batch,
              s.dp, s.pp, s.vpp, flag);
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
  report::TrainingTarget t;
  const bool tokens = f.tokens_opt && f.tokens_opt->count() > 0;
  if (!tokens) {
    if (f.price_opt && f.price_opt->count() > 0)
      input_error("--gpu-hour-price needs --train-tokens (the tokens the run trains on)");
    if (f.goodput_opt && f.goodput_opt->count() > 0)
      input_error("--goodput needs --train-tokens (the tokens the run trains on)");
    return t;
  }
  t.tokens = prefixed("--train-tokens", [&] { return report::parse_token_count(f.tokens); });
  if (f.price_opt && f.price_opt->count() > 0) {
    t.gpu_hour_price =
        prefixed("--gpu-hour-price", [&] { return report::parse_finite_number(f.price); });
    if (!(t.gpu_hour_price > 0))
      input_error("--gpu-hour-price: expected a price in USD per GPU-hour > 0, got '{}'", f.price);
  }
  if (f.goodput_opt && f.goodput_opt->count() > 0) {
    t.goodput = prefixed("--goodput", [&] { return report::parse_finite_number(f.goodput); });
    if (!(t.goodput > 0 && t.goodput <= 1))
      input_error("--goodput: expected a fraction 0 < F <= 1 (e.g. 0.9), got '{}'", f.goodput);
  }
  return t;
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
