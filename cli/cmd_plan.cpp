// `strata plan`: search every valid strategy for a model on a cluster, print the best
// ones (table, JSON or YAML), optionally write the best as a plan file and its trace.
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <optional>

#include "cli/commands.h"
#include "planner/trace_bounds.h"
#include "planner/memory_headroom.h"
#include "report/format_csv.h"
#include "report/format_json.h"
#include "report/format_table.h"
#include "report/format_yaml.h"
#include "cli/options.h"
#include "common/output_file.h"
#include "report/plan_report.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/progress_bar.h"
#include "report/compare_report.h"
#include "report/imported_job_note.h"
#include "report/no_plan_reason.h"
#include "report/report_notes.h"
#include "report/scaling_view.h"
#include "planner/plan.h"
#include "planner/search.h"
#include "planner/simulator.h"
#include "export/imported_job.h"
#include "export/imported_job.h"
#include "report/report_data.h"

namespace strata::cli {

namespace {

struct PlanFlags {
  ModelClusterFlags mc;
  TrainTargetFlags tt;
  int gpus = kDefaultGpus;
  std::string gpus_text;   // "256" or a list "128,256,512" (the scaling view)
  bool front = false;      // --front: the step-time vs memory front of the candidates
  std::int64_t global_batch = 0;
  int top = 10;
  std::string format = "table";
  std::string out, trace, report;
  // Restrictions of the search space.
  int tp = 0, pp = 0, dp = 0, cp = 0, vpp = 0, zero = -1;
  int ep = 0, etp = 0;  // 0 = search
  std::int64_t micro_batch = 0;
  std::string recompute, schedule;
  std::vector<std::string> recompute_modules;
  bool sequence_parallel = false;
  std::string memory_headroom = planner::kDefaultMemoryHeadroom;  // planner/memory_headroom.h
  bool explain = false;
  std::string from, job_file;  // --from megatron|deepspeed FILE: search around the user's job
  CLI::Option* gpus_opt = nullptr;
  CLI::Option* format_opt = nullptr;
  CLI::Option* top_opt = nullptr;
  CLI::Option* batch_opt = nullptr;
  CLI::Option* sp_opt = nullptr;
};

planner::SearchOptions search_options(const PlanFlags& f, const costmodel::SoftwareStack& stack) {
  planner::SearchOptions opt;
  opt.stack = &stack;
  opt.gpus = f.gpus;
  opt.global_batch = f.global_batch;
  // CSV lists every candidate that fits unless --top limits it.
  opt.top_k = (f.format == "csv" || f.front) && f.top_opt->count() == 0 ? INT_MAX : f.top;
  opt.precision = f.mc.precision;
  if (f.tp > 0) opt.tp = f.tp;
  if (f.pp > 0) opt.pp = f.pp;
  if (f.ep > 0) opt.ep = f.ep;
  if (f.etp > 0) opt.etp = f.etp;
  if (f.dp > 0) opt.dp = f.dp;
  if (f.cp > 0) opt.cp = f.cp;
  if (f.vpp > 0) opt.vpp = f.vpp;
  if (f.zero >= 0) opt.zero = f.zero;
  if (f.micro_batch > 0) opt.micro_batch = f.micro_batch;
  if (!f.recompute.empty()) opt.recompute = planner::recompute_from_string(f.recompute);
  if (!f.recompute_modules.empty()) {
    try {
      opt.recompute_modules = costmodel::recompute_modules_from_names(f.recompute_modules);
    } catch (const InputError& e) {
      input_error("--recompute-modules: {}", e.what());
    }
  }
  if (!f.schedule.empty()) opt.schedule = planner::schedule_from_string(f.schedule);
  if (f.sp_opt->count() > 0) opt.sequence_parallel = f.sequence_parallel;
  return opt;
}

// `--gpus 128,256,512`: one search per count, the best plan of each, as a table, JSON or
// an HTML page with the charts (--report).
void run_scaling(const PlanFlags& f, const std::vector<int>& counts, const models::ModelSpec& model,
                 const costmodel::ClusterSpec& cluster, const costmodel::SoftwareStack& stack,
                 const report::TrainingTarget& target) {
  if (!f.out.empty() || !f.trace.empty() || f.front)
    input_error("--gpus {}: --out, --trace and --front take one GPU count (a list plans each count)", f.gpus_text);
  if (f.format != "table" && f.format != "json")
    input_error("--gpus {}: --format {} is not available for a list of GPU counts (table or json)", f.gpus_text,
                f.format);
  const report::ScalingView view =
      report::build_scaling_view(model, f.mc.cluster, cluster, counts, search_options(f, stack), target);
  if (!f.report.empty())
    write_output(f.report, report::scaling_html(view), "--report");
  print_stdout(f.format == "json" ? report::scaling_json(view).dump(2) + "\n" : report::format_scaling_table(view));
}

// --from megatron|deepspeed FILE: the user's job. Its model (DeepSpeed: --model), world
// size (or --gpus), global batch, sequence length, precision and stack settings become the
// search's; its own layout (DeepSpeed: tp, ep, etp from the flags) is predicted beside the
// plans. The layout flags stay search restrictions.
exports::ImportedJob import_plan_job(PlanFlags& f) {
  if (f.from.empty()) input_error("a job file needs --from megatron|deepspeed");
  if (f.job_file.empty()) input_error("--from {} needs the job file (strata plan --from {} FILE)", f.from, f.from);
  if (f.batch_opt->count() > 0) input_error("--global-batch conflicts with --from {}: the job file sets it", f.from);
  int world = 0;
  if (f.gpus_opt->count() > 0) {
    const std::vector<int> counts = report::parse_gpu_counts(f.gpus_text, "--gpus");
    if (counts.size() != 1) input_error("--from {} plans one job: give --gpus one count", f.from);
    world = counts.front();
  }
  const std::string text = prefixed("--from", [&] { return read_file(f.job_file); });
  // DeepSpeed's tp, ep, etp are model code: the search restrictions, else 1.
  const exports::ImportedJob job = exports::read_job(
      f.from, text, f.job_file, {f.mc.model_given(), std::max(f.tp, 1), std::max(f.ep, 1), std::max(f.etp, 1), world});
  f.gpus = job.strategy.gpus();
  f.gpus_text = std::to_string(f.gpus);
  f.global_batch = job.strategy.global_batch;
  if (f.mc.precision.empty()) f.mc.precision = job.strategy.precision;
  return job;
}

void run_plan(PlanFlags& f) {
  std::vector<PathFlag> inputs = model_cluster_inputs(f.mc);
  inputs.push_back({f.job_file, "--from"});
  check_path_aliasing({{f.out, "--out"}, {f.trace, "--trace"}, {f.report, "--report"}}, inputs);
  check_plan_on_stdout_format(f.out, f.format_opt, f.format);
  if (!f.out.empty()) check_output_path(f.out, "--out");
  if (!f.trace.empty()) check_output_path(f.trace, "--trace");
  if (!f.report.empty()) {
    // The scaling and front pages are HTML only; a .md or .json name would get HTML inside.
    if (f.report == "-" || report::compare_report_format(f.report, "") != "html")
      input_error("--report {}: plan writes its scaling and front views as HTML pages (name the file .html); "
                  "--format json prints the data",
                  f.report);
    check_output_path(f.report, "--report");
  }
#ifndef NDEBUG
  warn("Debug build: planner timings are not representative");
#endif

  PlanReport report;
  report.command = "plan";
  report.target = load_train_target(f.tt);
  std::optional<exports::ImportedJob> job;
  if (!f.from.empty() || !f.job_file.empty()) job = import_plan_job(f);
  const models::ModelSpec model =
      job && job->model_read ? (f.mc.seq > 0 ? models::with_seq_len(job->model, f.mc.seq) : job->model)
                             : load_model_flag(f.mc, &report.defaults);
  const costmodel::ClusterSpec device_cluster = load_cluster_flag(f.mc);
  const costmodel::SoftwareStack stack =
      job ? exports::apply_overrides(stack_for_job(f.mc, device_cluster, job->strategy, report.notes), job->stack)
          : load_stack_flag(f.mc, device_cluster);
  // The planner plans with the headroom taken off each device; the report shows the device.
  const double headroom = planner::parse_memory_headroom_gib(f.memory_headroom, device_cluster.device.memory_gib);
  const costmodel::ClusterSpec cluster =
      headroom > 0 ? planner::with_memory_headroom(device_cluster, headroom) : device_cluster;
  if (f.gpus_opt->count() > 0) {
    const std::vector<int> counts = report::parse_gpu_counts(f.gpus_text, "--gpus");
    if (counts.size() > 1) {
      if (f.batch_opt->count() == 0 && !f.mc.model_given()) f.global_batch = kDefaultGlobalBatch;
      run_scaling(f, counts, model, cluster, stack, report.target);
      return;
    }
    f.gpus = counts.front();
  }
  if (!f.report.empty() && !f.front)
    input_error("--report is for a list of GPU counts (--gpus 128,256,512) or for --front");
  if (!f.mc.model_given() && !job) report.defaults.push_back(fmt::format("model {}", kDefaultModel));
  if (!f.mc.cluster_given()) report.defaults.push_back(fmt::format("cluster {}", kDefaultCluster));
  if (f.gpus_opt->count() == 0 && !job) {
    std::string note;
    f.gpus = default_gpu_count(f.mc, cluster, &note);
    report.defaults.push_back(note);
  }
  if (f.batch_opt->count() == 0 && !f.mc.model_given() && !job) {
    f.global_batch = kDefaultGlobalBatch;
    report.defaults.push_back(fmt::format("global batch {}", kDefaultGlobalBatch));
  }

  planner::SearchOptions opt = search_options(f, stack);
  std::optional<ProgressBar> bar;
  if (stderr_is_tty()) {
    bar.emplace("candidates");
    opt.progress = [&bar](std::int64_t done, std::int64_t total) { bar->update(done, total); };
  }
  planner::SearchResult result = planner::search(model, cluster, opt);
  bar.reset();
  if (result.ranked.empty()) throw NoFeasiblePlan(no_plan_reason(model, f.mc.cluster, cluster, f.gpus, result, &stack));

  report.model = model.name;
  report.cluster = f.mc.cluster;
  report.device = cluster.device.name;
  report.gpus = f.gpus;
  report.global_batch = result.ranked.front().strategy.global_batch;
  report.memory_capacity_gib = device_cluster.device.memory_gib;
  report.headroom_gib = headroom;
  report.explain = f.explain;
  report.reserve_gib = cluster.device.reserve_gib;
  report.notes = provenance_notes(cluster);
  append_new_notes(report.notes, result.ranked.front().prediction.notes);
  report.searched = true;
  report.candidates_evaluated = result.candidates_evaluated;
  report.infeasible_memory = result.infeasible_memory;
  report.invalid = result.invalid;
  report.search_s = result.search_s;
  for (const auto& c : result.ranked) report.plans.push_back(planner::to_plan(model, f.mc.cluster, c));
  if (job) {
    report.notes.insert(report.notes.begin(),
                        report::add_imported_job(report, f.job_file, f.mc.cluster, job->strategy, job->stage_layers,
                                                 model, cluster, stack));
    report.notes.insert(report.notes.begin() + 1,
                        fmt::format("job read from {} ({}): model {}, {} GPUs, global batch {}; stack {} with the "
                                    "job's settings",
                                    f.job_file, f.from, model.name, f.gpus, f.global_batch, stack.name));
  }

  // Files first, so a failure to write one is reported before anything is printed.
  if (!f.trace.empty()) {
    planner::require_trace_within_bound(report.plans.front().strategy, "--trace");
    planner::SimulateOptions so;
    so.stack = &stack;
    so.timeline = true;
    so.stage_layers = report.plans.front().stage_layers;
    auto sim = planner::simulate(model, cluster, report.plans.front().strategy, so);
    write_output(f.trace,
                 planner::chrome_trace_json(sim, fmt::format("strata plan: {} on {} GPUs of {}",
                                                             model.name, f.gpus, f.mc.cluster)),
                 "--trace");
  }
  if (f.out == "-") {  // stdout carries the plan only, in the --format asked for
    print_stdout(plan_for_stdout(report.plans.front(), f.format));
    return;
  }
  if (!f.out.empty()) write_output(f.out, planner::plan_to_yaml(report.plans.front()), "--out");
  if (f.front) {
    if (f.format != "table") input_error("--front prints a table (use --format table)");
    if (!f.report.empty())
      write_output(f.report,
                   report::pareto_html(report.plans, report.memory_capacity_gib,
                                       fmt::format("{} on {} GPUs of {}", model.name, f.gpus, f.mc.cluster)),
                   "--report");
    print_stdout(format_plan_table(report) + "\n" +
                 report::format_pareto_table(report.plans, report.memory_capacity_gib));
    return;
  }
  print_stdout(f.format == "json"   ? format_plan_json(report)
               : f.format == "yaml" ? format_plan_yaml(report)
               : f.format == "csv"  ? format_plan_csv(report)
                                    : format_plan_table(report));
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto flags = std::make_shared<PlanFlags>();
  PlanFlags& f = *flags;
  auto* cmd = app.add_subcommand(
      "plan", "Search every parallel layout of a model on a cluster and rank them");
  cmd->footer(fmt::format(
      "With no flags: {} on {} with {} GPUs, global batch {}.\nExample: strata plan --model "
      "llama2-70b --cluster dgx-h100 --gpus 256 --global-batch 1024 --top 5",
      kDefaultModel, kDefaultCluster, kDefaultGpus, kDefaultGlobalBatch));
  add_model_cluster_flags(*cmd, f.mc);
  cmd->add_option("--from", f.from,
                  "search around your job: megatron (a file of pretrain_gpt.py arguments, torchrun prefix "
                  "allowed) or deepspeed (config JSON, with --model); its model, GPUs, batch and stack "
                  "settings are the search's, and its own layout is predicted beside the plans")
      ->check(CLI::IsMember({"megatron", "deepspeed"}));
  cmd->add_option("job_file", f.job_file, "the file --from reads")->check(non_empty_path());
  add_files_help(*cmd, "--model, --cluster, --profile, --stack (files, or catalog names), the --from job file",
                 "--out (plan YAML, - for stdout), --trace (Chrome trace JSON, at most 200 MB), --report (the "
                 "scaling or front view, HTML)");
  f.gpus_opt = cmd->add_option("--gpus,-g", f.gpus_text,
                               fmt::format("number of GPUs to use (default {}), or a list 128,256,512: the best "
                                           "plan per count with time to train (--train-tokens)", kDefaultGpus));
  cmd->add_flag("--front", f.front,
                "also print the step-time vs memory front of every plan that fits (the plans no other beats on both)");
  cmd->add_option("--report", f.report,
                  "with a list of --gpus: write the scaling view as an HTML page with charts; with --front: the "
                  "step-time vs memory chart")
      ->check(non_empty_path());
  f.batch_opt = add_positive<std::int64_t>(*cmd, "--global-batch", f.global_batch,
                                           "sequences per optimizer step (default: 1536 for the "
                                           "default model, else the planner's default)",
                                           std::int64_t{1} << 40);
  f.top_opt = add_positive(*cmd, "--top", f.top, "how many plans to show (with --format csv: every plan that fits, "
                           "unless given)", 100000)
                  ->capture_default_str();
  f.format_opt = add_format_flag(*cmd, f.format, {"table", "json", "yaml", "csv"});
  add_explain_flag(*cmd, f.explain);
  cmd->add_option("--memory-headroom", f.memory_headroom,
                  "GPU memory each plan must leave free beyond the workspace reserve, for fragmentation and "
                  "communication buffers: a share of the device memory (5%) or GiB (4); 0 plans up to the reserve")
                      ->capture_default_str();
  add_train_target_flags(*cmd, f.tt);
  cmd->add_option("--out,-o", f.out,
                  "write the best plan as a plan YAML file (- for stdout, instead of the table; JSON with "
                  "--format json)")
      ->check(non_empty_path());
  cmd->add_option("--trace", f.trace, "write the best plan's Chrome/Perfetto trace (JSON)")
      ->check(non_empty_path());
  auto* g = "Search restrictions";
  add_positive(*cmd, "--tp", f.tp, "only this tensor-parallel size", 1 << 20)->group(g);
  add_positive(*cmd, "--ep", f.ep, "only this expert-parallel size (MoE)", 1 << 20)->group(g);
  add_positive(*cmd, "--etp", f.etp, "only this expert tensor-parallel size (MoE)", 1 << 20)->group(g);
  add_positive(*cmd, "--pp", f.pp, "only this pipeline-parallel size", 1 << 20)->group(g);
  add_positive(*cmd, "--dp", f.dp, "only this data-parallel size", INT_MAX)->group(g);
  add_positive(*cmd, "--cp", f.cp, "only this context-parallel size", 1 << 20)->group(g);
  add_positive(*cmd, "--vpp", f.vpp, "only this number of virtual stages per rank", 1 << 20)
      ->group(g);
  add_positive<std::int64_t>(*cmd, "--micro-batch", f.micro_batch, "only this micro-batch size",
                             std::int64_t{1} << 40)
      ->group(g);
  cmd->add_option("--zero", f.zero, "only this ZeRO stage (0..3)")
      ->check(CLI::Range(0, 3))
      ->group(g);
  cmd->add_option("--recompute", f.recompute, "only this activation recompute")
      ->check(CLI::IsMember(recompute_names()))
      ->group(g);
  cmd->add_option("--recompute-modules", f.recompute_modules,
                  "the Megatron-Core modules the selective candidates recompute, comma-separated (layernorm, "
                  "mla_up_proj, core_attn, mlp, moe, moe_act, shared_experts; default: the stack's selective)")
      ->delimiter(',')
      ->group(g);
  cmd->add_option("--schedule", f.schedule, "only this pipeline schedule")
      ->check(CLI::IsMember(schedule_names()))
      ->group(g);
  f.sp_opt = cmd->add_flag("--sequence-parallel,!--no-sequence-parallel", f.sequence_parallel,
                           "only with (or without) sequence parallelism")
                 ->group(g);
  cmd->callback([flags] { run_plan(*flags); });
}

}  // namespace strata::cli
