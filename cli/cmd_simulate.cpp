// `strata simulate`: predict one strategy's step time and memory (table, JSON or YAML),
// optionally write its Chrome trace and a plan file. `--from megatron ARGS_FILE` predicts
// the job a Megatron-LM command line runs; `--from deepspeed CONFIG_JSON --model M` the job
// of a DeepSpeed config (export/import_megatron.h, export/import_deepspeed.h); `--from runs
// RUNS_FILE --row ID` one row of a runs file (calibration/measured_runs.h) as validate --runs
// predicts it, with its measured time beside the prediction.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <climits>

#include "calibration/measured_runs.h"
#include "cli/commands.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/device_profile.h"
#include "planner/trace_bounds.h"
#include "report/format_json.h"
#include "report/format_table.h"
#include "report/format_yaml.h"
#include "cli/options.h"
#include "common/output_file.h"
#include "report/plan_report.h"
#include "report/report_notes.h"
#include "report/strategy_list.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "export/imported_job.h"
#include "planner/plan.h"
#include "planner/simulator.h"
#include "planner/stack_support.h"
#include "planner/layout_request.h"
#include "planner/strategy.h"

namespace strata::cli {

namespace {

// The layout flags fill planner::LayoutRequest, and planner::derive_strategy derives what
// they leave out: --gpus, --dp and --global-batch stay 0 unless given (each is >= 1 given).
struct SimulateFlags : planner::LayoutRequest {
  ModelClusterFlags mc;
  TrainTargetFlags tt;
  std::string format = "table";
  std::string out, trace;
  bool ops = false;  // --ops: per-op cost table of the first block and the head
  bool explain = false;
  CLI::Option* gpus_opt = nullptr;
  CLI::Option* format_opt = nullptr;
  CLI::Option* dp_opt = nullptr;
  CLI::Option* batch_opt = nullptr;
  std::string from, job_file;  // --from megatron|deepspeed|runs and the file it reads
  std::string row;             // --row: the runs-file row --from runs predicts
  std::vector<CLI::Option*> layout_opts;  // flags an imported job sets itself
};

// Simulates `s` and prints or writes the result (shared by flags and imported jobs).
void predict(SimulateFlags& f, PlanReport& report, const models::ModelSpec& model,
             const costmodel::ClusterSpec& cluster, const costmodel::SoftwareStack& stack,
             const planner::Strategy& asked, std::vector<std::vector<int>> stage_layers,
             const std::string& measured_note = {}, double measured_s = 0, const std::string& measured_source = {}) {
  const planner::Strategy s = planner::with_stack_recompute(asked, stack);
  if (auto v = planner::validate(s, model, stage_layers.empty() ? planner::StageSplit::Strata
                                                                 : planner::StageSplit::Given);
      !v.empty())
    throw InputError(fmt::format("invalid strategy for {}: {}", model.name, join_violations(v)));
  if (s.gpus() > cluster.total_gpus())
    input_error("dp x tp x pp x cp ({}) exceeds cluster {} ({} GPUs = {} nodes x {})", s.gpus(),
                f.mc.cluster, cluster.total_gpus(), cluster.nodes, cluster.gpus_per_node);

  planner::SimulateOptions so;
  if (!f.trace.empty()) planner::require_trace_within_bound(s, "--trace");
  so.stack = &stack;
  so.stage_layers = std::move(stage_layers);
  so.timeline = !f.trace.empty();
  so.op_costs = f.ops;
  planner::SimulationResult sim = planner::simulate(model, cluster, s, so);

  planner::Plan plan;
  plan.model = model;
  plan.cluster = f.mc.cluster;
  plan.strategy = s;
  plan.stage_layers = sim.stage_layers;
  plan.prediction = sim.prediction;

  report.model = model.name;
  report.cluster = f.mc.cluster;
  report.device = cluster.device.name;
  report.gpus = s.gpus();
  report.global_batch = s.global_batch;
  report.memory_capacity_gib = cluster.device.memory_gib;
  report.reserve_gib = cluster.device.reserve_gib;
  const auto provenance = provenance_notes(cluster);
  report.notes.insert(report.notes.begin(), provenance.begin(), provenance.end());
  if (measured_s > 0)  // a runs-file row: what it took beside what is predicted
    report.notes.push_back(fmt::format("{}: measured {:.4g} s, predicted {:.4g} s, {:+.1f} % off; source: {}",
                                       measured_note, measured_s, sim.prediction.iteration_s,
                                       100 * (sim.prediction.iteration_s / measured_s - 1), measured_source));
  append_new_notes(report.notes, sim.prediction.notes);
  report.plans.push_back(plan);

  if (!plan.prediction.fits_memory)
    warn(fmt::format("this strategy does not fit: {:.1f} GiB per GPU needed, {} has {:.0f} GiB",
                     plan.prediction.peak_memory_gib, cluster.device.name,
                     cluster.device.memory_gib));
  if (!f.trace.empty())
    write_output(
        f.trace,
        planner::chrome_trace_json(sim, fmt::format("strata simulate: {} tp={} pp={} dp={}",
                                                    model.name, s.tp, s.pp, s.dp)),
        "--trace");
  if (f.out == "-") {  // stdout carries the plan only, in the --format asked for
    print_stdout(plan_for_stdout(plan, f.format));
    return;
  }
  if (!f.out.empty()) write_output(f.out, planner::plan_to_yaml(plan), "--out");
  print_stdout(f.format == "json"   ? format_simulation_json(report)
               : f.format == "yaml" ? format_simulation_yaml(report)
                                    : format_simulation_table(report));
  if (f.ops && f.format == "table") print_stdout(format_op_costs(sim.ops));
}

// The job of a Megatron-LM command line or DeepSpeed config, with the flags that may still
// complete it (--gpus; for DeepSpeed --model and --tp).
exports::ImportedJob import_job(const SimulateFlags& f) {
  if (f.job_file.empty())
    input_error("--from {} needs the job file (strata simulate --from {} FILE)", f.from, f.from);
  // A DeepSpeed config holds no tensor or expert parallelism (both are model code there):
  // --tp, --ep and --etp complete it.
  const auto deepspeed_flag = [](const std::string& n) {
    return n == "--tp" || n == "--ep" || n == "--etp";
  };
  for (CLI::Option* o : f.layout_opts)
    if (o->count() > 0 && !(f.from == "deepspeed" && deepspeed_flag(o->get_name())))
      input_error("{} conflicts with --from {}: the job file sets it", o->get_name(), f.from);
  if (f.dp_opt->count() > 0) input_error("--dp conflicts with --from {}: use --gpus", f.from);
  return exports::read_job(f.from, read_file(f.job_file), f.job_file,
                           {f.mc.model_given(), f.tp, f.ep, f.etp, f.gpus_opt->count() > 0 ? f.gpus : 0});
}

void run_imported(SimulateFlags& f, PlanReport& report) {
  exports::ImportedJob job = import_job(f);
  const models::ModelSpec model =
      job.model_read ? (f.mc.seq > 0 ? models::with_seq_len(job.model, f.mc.seq) : job.model)
                     : load_model_flag(f.mc);
  const costmodel::ClusterSpec cluster = load_cluster_flag(f.mc);
  if (!f.mc.cluster_given()) report.defaults.push_back(fmt::format("cluster {}", kDefaultCluster));
  const costmodel::SoftwareStack base = stack_for_job(f.mc, cluster, job.strategy, report.notes);
  const costmodel::SoftwareStack stack = exports::apply_overrides(base, job.stack);
  report.notes.push_back(fmt::format(
      "job read from {} ({}); stack {} with the job's precision and overlap settings", f.job_file,
      f.from, base.name));
  if (!job.ignored.empty())
    report.notes.push_back(fmt::format("ignored (no effect on the prediction): {}", fmt::join(job.ignored, " ")));
  predict(f, report, model, cluster, stack, job.strategy, job.stage_layers);
}

// One row of a runs file, simulated as `validate --runs` does (its model, cluster, stack,
// settings and split; --profile replaces the cluster's device profile).
void run_runs_row(SimulateFlags& f, PlanReport& report) {
  if (f.job_file.empty()) input_error("--from runs needs the runs file (strata simulate --from runs FILE --row ID)");
  for (CLI::Option* o : f.layout_opts)
    if (o->count() > 0) input_error("{} conflicts with --from runs: the row sets it", o->get_name());
  if (f.dp_opt->count() > 0 || f.gpus_opt->count() > 0)
    input_error("{} conflicts with --from runs: the row sets it", f.dp_opt->count() > 0 ? "--dp" : "--gpus");
  if (f.mc.model_given() || f.mc.cluster_given() || !f.mc.stack.empty() || f.mc.seq > 0 || !f.mc.precision.empty())
    input_error("--model, --cluster, --stack, --seq and --precision conflict with --from runs: the row sets them");
  const std::vector<calibration::MeasuredRun> runs = calibration::load_measured_runs(f.job_file);
  std::vector<std::string> ids;
  for (const auto& r : runs) ids.push_back(r.id);
  if (f.row.empty())
    input_error("--from runs needs --row ID: {} has {} rows ({})", f.job_file, runs.size(), fmt::join(ids, ", "));
  const auto it = std::find_if(runs.begin(), runs.end(), [&](const auto& r) { return r.id == f.row; });
  if (it == runs.end())
    input_error("--row {}: no such row in {} (rows: {})", f.row, f.job_file, fmt::join(ids, ", "));
  calibration::MeasuredRun run = *it;
  if (!f.mc.profile.empty())
    costmodel::apply_profile(run.cluster, costmodel::load_device_profile(f.mc.profile), f.mc.profile);
  f.mc.cluster = run.cluster_name;
  predict(f, report, run.model, run.cluster, run.stack, run.strategy, run.stage_layers,
          fmt::format("row {} of {}{}", run.id, f.job_file, run.fit ? "" : " (use: check)"), run.measured_s,
          run.source);
}

void run_simulate(SimulateFlags& f) {
  if (f.ops && f.format != "table") input_error("--ops prints a table: use it with --format table");
  if (f.ops && f.out == "-") input_error("--ops prints a table: it cannot go with --out - (the plan on stdout)");
  check_plan_on_stdout_format(f.out, f.format_opt, f.format);
  std::vector<PathFlag> inputs = model_cluster_inputs(f.mc);
  inputs.push_back({f.job_file, "--from"});
  check_path_aliasing({{f.out, "--out"}, {f.trace, "--trace"}}, inputs);
  if (!f.out.empty()) check_output_path(f.out, "--out");
  if (!f.trace.empty()) check_output_path(f.trace, "--trace");

  PlanReport report;
  report.command = "simulate";
  report.explain = f.explain;
  report.target = load_train_target(f.tt);
  if (!f.row.empty() && f.from != "runs") input_error("--row needs --from runs");
  if (!f.from.empty() || !f.job_file.empty()) {
    if (f.from.empty()) input_error("a job file needs --from megatron|deepspeed|runs");
    if (f.from == "runs") return run_runs_row(f, report);
    run_imported(f, report);
    return;
  }
  const models::ModelSpec model = load_model_flag(f.mc, &report.defaults);
  const costmodel::ClusterSpec cluster = load_cluster_flag(f.mc);
  const costmodel::SoftwareStack stack = load_stack_flag(f.mc, cluster);
  if (!f.mc.model_given()) report.defaults.push_back(fmt::format("model {}", kDefaultModel));
  if (!f.mc.cluster_given()) report.defaults.push_back(fmt::format("cluster {}", kDefaultCluster));

  const planner::Strategy s = planner::derive_strategy(f, f.mc.model_given() ? 512 : kDefaultGlobalBatch,
                                                       f.mc.precision, report.defaults);
  predict(f, report, model, cluster, stack, s, {});
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto flags = std::make_shared<SimulateFlags>();
  SimulateFlags& f = *flags;
  auto* cmd = app.add_subcommand("simulate", "Predict step time and memory of one strategy");
  cmd->footer(
      "Example: strata simulate --model gpt3-175b --cluster dgx-a100 --tp 8 --pp 16 --dp 8 "
      "--micro-batch 1 --global-batch 1536 --schedule interleaved --vpp 2");
  add_model_cluster_flags(*cmd, f.mc);
  add_files_help(*cmd, "--model, --cluster, --profile, --stack (files, or catalog names), the --from job file",
                 "--out (plan YAML, - for stdout), --trace (Chrome trace JSON, at most 200 MB)");
  f.gpus_opt =
      add_positive(*cmd, "--gpus,-g", f.gpus,
                   "total GPUs; must equal dp x tp x pp (dp defaults to gpus/(tp x pp))", INT_MAX);
  f.layout_opts.push_back(
      add_positive(*cmd, "--tp", f.tp, "tensor-parallel size", 1 << 20)->capture_default_str());
  f.layout_opts.push_back(
      add_positive(*cmd, "--pp", f.pp, "pipeline-parallel size", 1 << 20)->capture_default_str());
  f.layout_opts.push_back(
      add_positive(*cmd, "--cp", f.cp,
                   "context-parallel size (each sequence split over cp ranks; K/V exchange per "
                   "the stack's cp_comm_type)",
                   1 << 20)
          ->capture_default_str());
  f.layout_opts.push_back(
      add_positive(*cmd, "--ep", f.ep,
                   "expert-parallel size (MoE): splits the experts over ep of the tp x dp ranks of "
                   "a stage",
                   1 << 20)
          ->capture_default_str());
  f.layout_opts.push_back(
      add_positive(*cmd, "--etp", f.etp, "expert tensor-parallel size (MoE): splits each expert",
                   1 << 20)
          ->capture_default_str());
  f.dp_opt = add_positive(*cmd, "--dp", f.dp, "data-parallel size", INT_MAX);
  f.layout_opts.push_back(
      add_positive(*cmd, "--vpp", f.vpp, "virtual stages (model chunks) per pipeline rank", 1 << 20)
          ->capture_default_str());
  f.layout_opts.push_back(add_positive<std::int64_t>(*cmd, "--micro-batch", f.micro_batch,
                                                     "sequences per micro-batch",
                                                     std::int64_t{1} << 40)
                              ->capture_default_str());
  f.batch_opt = add_positive<std::int64_t>(
      *cmd, "--global-batch", f.global_batch,
      "sequences per optimizer step (default: 1536 for the default model, else 512, rounded up "
      "to a multiple of micro-batch x dp)",
      std::int64_t{1} << 40);
  f.layout_opts.push_back(f.batch_opt);
  f.layout_opts.push_back(
      cmd->add_option("--zero", f.zero,
                      "ZeRO stage: 0, 1 (distributed optimizer), 2 (+ sharded gradients), 3 (+ "
                      "sharded parameters, FSDP)")
          ->check(CLI::Range(0, 3))
          ->capture_default_str());
  f.layout_opts.push_back(cmd->add_option("--recompute", f.recompute, "activation recompute")
                              ->check(CLI::IsMember(recompute_names()))
                              ->capture_default_str());
  f.layout_opts.push_back(
      cmd->add_option("--recompute-modules", f.recompute_modules,
                      "with --recompute selective: the Megatron-Core modules recomputed, comma-separated "
                      "(layernorm, mla_up_proj, core_attn, mlp, moe, moe_act, shared_experts; default core_attn)")
          ->delimiter(','));
  f.layout_opts.push_back(
      cmd->add_option("--recompute-layers", f.recompute_layers,
                      "with --recompute full: only the first N blocks of each model chunk re-run their forward, the "
                      "others keep their activations (Megatron-LM's --recompute-method block --recompute-num-layers "
                      "N); default every block")
          ->check(CLI::Range(1, 1 << 20)));
  f.layout_opts.push_back(
      cmd->add_option("--schedule", f.schedule,
                      "pipeline schedule (default: interleaved if --vpp > 1, else 1f1b)")
          ->check(CLI::IsMember(schedule_names())));
  f.layout_opts.push_back(
      cmd->add_flag("--sequence-parallel", f.sequence_parallel, "shard norms/dropout over tp"));
  f.layout_opts.push_back(cmd->add_flag(
      "--ep-overlap", f.ep_overlap,
      "Megatron-Core's batch-level EP overlap (--overlap-moe-expert-parallel-comm): steady-state forward and "
      "backward steps of two micro-batches merged, each hiding the other's MoE token exchange"));
  f.layout_opts.push_back(cmd->add_flag(
      "--delay-wgrad", f.delay_wgrad,
      "with --ep-overlap: Megatron-Core's --delay-wgrad-compute, the weight gradients of the merged steps run "
      "apart from the input gradients, so the backward's exchange starts sooner"));
  cmd->add_option("--from", f.from,
                  "predict the job of a Megatron-LM command line (megatron: a file holding the "
                  "pretrain_gpt.py arguments, torchrun prefix allowed) or a DeepSpeed config "
                  "(deepspeed: config JSON, with --model, --tp and for MoE --ep/--etp); --gpus gives "
                  "the world size when the file does not), or one row of a runs file (runs: with --row ID; "
                  "the row's model, cluster, stack and layout, and its measured time in a note)")
      ->check(CLI::IsMember({"megatron", "deepspeed", "runs"}));
  cmd->add_option("--row", f.row, "with --from runs: the id of the row to predict");
  cmd->add_option("job_file", f.job_file, "the file --from reads")->check(non_empty_path());
  f.format_opt = add_format_flag(*cmd, f.format);
  add_explain_flag(*cmd, f.explain);
  add_train_target_flags(*cmd, f.tt);
  cmd->add_option("--out,-o", f.out,
                  "write the strategy as a plan YAML file (- for stdout, instead of the table; JSON with "
                  "--format json)")
      ->check(non_empty_path());
  cmd->add_flag("--ops", f.ops,
                "after the table: what each op of the first transformer block and of the head costs "
                "on one rank for one micro-batch (time, achieved TFLOP/s or GB/s, source)")
;
  cmd->add_option("--trace", f.trace, "write a Chrome/Perfetto trace (JSON) of the iteration")
      ->check(non_empty_path());
  cmd->callback([flags] { run_simulate(*flags); });
}

}  // namespace strata::cli
