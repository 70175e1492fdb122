// `strata compare`: several strategies side by side (the planner's top K, a YAML list,
// or the plans of a `strata validate` run), each simulated with its timeline, rendered
// as a self-contained HTML page, a Markdown table or JSON. The flags and their defaults
// are here; the choice, the simulations and the rendering are report/compare_report.h.
#include <algorithm>
#include <climits>
#include <optional>

#include <fmt/format.h>

#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "common/output_file.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "report/compare_report.h"

namespace strata::cli {

namespace {

struct CompareFlags {
  ModelClusterFlags mc;
  TrainTargetFlags tt;
  int gpus = kDefaultGpus;
  std::int64_t global_batch = 0;
  int top = 5;
  std::string strategies;
  std::string report = "-";
  std::string format;
  std::string measured;
  std::string gantt = "best";
  CLI::Option* gpus_opt = nullptr;
  CLI::Option* batch_opt = nullptr;
  CLI::Option* top_opt = nullptr;
};

void run_compare(CompareFlags& f) {
  std::vector<PathFlag> inputs = model_cluster_inputs(f.mc);
  inputs.push_back({f.strategies, "--strategies"});
  inputs.push_back({f.measured, "--measured"});
  check_path_aliasing({{f.report, "--report"}}, inputs);
  if (f.report != "-") check_output_path(f.report, "--report");
  CompareOptions o;
  o.format = compare_report_format(f.report, f.format);
  o.target = load_train_target(f.tt);

  const models::ModelSpec model = load_model_flag(f.mc);
  const costmodel::ClusterSpec cluster = load_cluster_flag(f.mc);
  const costmodel::SoftwareStack stack = load_stack_flag(f.mc, cluster);

  std::optional<MeasuredFile> measured;
  if (!f.measured.empty()) measured = parse_measured_json(read_file(f.measured), f.measured);
  // The measured plans are the strategies when neither --strategies nor --top chose them.
  o.from_measured = measured && f.strategies.empty() && f.top_opt->count() == 0;
  if (f.gpus_opt->count() == 0) {
    if (o.from_measured) f.gpus = measured->ranks;
    else f.gpus = default_gpu_count(f.mc, cluster);
  }
  if (f.batch_opt->count() == 0 && !f.mc.model_given()) f.global_batch = kDefaultGlobalBatch;
  o.cluster_name = f.mc.cluster;
  o.gpus = f.gpus;
  o.global_batch = f.global_batch;
  o.default_global_batch = f.mc.model_given() ? 512 : kDefaultGlobalBatch;
  o.top = f.top;
  o.precision = f.mc.precision;
  if (!f.strategies.empty()) o.strategies_text = read_file(f.strategies);
  o.strategies_path = f.strategies;
  o.measured = measured ? &*measured : nullptr;
  o.measured_path = f.measured;
  o.gantt = f.gantt;
  o.command_line = reproducing_command();

  const ReportData data = build_compare_report(model, cluster, stack, o, [](const std::string& w) { warn(w); });
  const std::string text = render_compare_report(data, o.format);
  write_output(f.report, text, "--report");
  if (f.report != "-")
    fmt::print(stderr, "wrote {} ({} strategies, {} bytes)\n", f.report, data.entries.size(), text.size());
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto flags = std::make_shared<CompareFlags>();
  CompareFlags& f = *flags;
  auto* cmd = app.add_subcommand("compare", "Compare strategies side by side (HTML report, Markdown or JSON)");
  cmd->footer(
      "Examples:\n  strata compare --model gpt2-124m --cluster dgx-a100 --gpus 16 --top 3 --report r.html\n"
      "  strata compare --model llama2-70b --cluster dgx-h100 --gpus 64 --strategies s.yaml --format md\n"
      "  strata compare --model tiny --cluster local-cpu --measured validate.json --report r.html\n"
      "strategies file: `strategies: [{tp: 8, pp: 4, micro_batch: 1}, {ep: 8, zero: 1}, ...]` with keys\n"
      "dp, tp, pp, cp, ep, etp, vpp, micro_batch, global_batch, zero, recompute, sequence_parallel,\n"
      "schedule, rank_order, precision (bf16|fp16|fp8).");
  add_model_cluster_flags(*cmd, f.mc);
  add_files_help(*cmd, "--model, --cluster, --profile, --stack (files, or catalog names), --strategies, --measured",
                 "--report (HTML, Markdown or JSON; - for stdout; Gantt charts at most 200 MB)");
  add_train_target_flags(*cmd, f.tt);
  f.gpus_opt = add_positive(*cmd, "--gpus,-g", f.gpus, "number of GPUs", INT_MAX)->capture_default_str();
  f.batch_opt = add_positive<std::int64_t>(*cmd, "--global-batch", f.global_batch,
                                           "sequences per optimizer step (default: as `strata plan`)",
                                           std::int64_t{1} << 40);
  f.top_opt = add_positive(*cmd, "--top", f.top, "compare the planner's best K strategies", 1000)
                  ->capture_default_str();
  cmd->add_option("--strategies", f.strategies, "YAML file listing the strategies to compare")
      ->check(CLI::ExistingFile)
      ->excludes(f.top_opt);
  // --out as on every other command that writes one file; --report is the report's own name.
  cmd->add_option("--report,-o,--out", f.report,
                  "output file (- for stdout); its extension (.html, .md, .json) chooses the format")
      ->capture_default_str();
  cmd->add_option("--format,-f", f.format,
                  "html, md (Markdown table) or json (default: from the --report extension; html "
                  "for other files, md for stdout)")
      ->check(CLI::IsMember({"html", "md", "json"}));
  cmd->add_option("--measured", f.measured,
                  "`strata validate --format json` output: measured step times beside the predictions")
      ->check(CLI::ExistingFile);
  cmd->add_option("--gantt", f.gantt, "timeline charts: best (the best strategy, and the fastest pipelined one when the best "
                  "has pp 1), all, or none")
      ->check(CLI::IsMember({"best", "all", "none"}))
      ->capture_default_str();
  cmd->callback([flags] { run_compare(*flags); });
}

}  // namespace strata::cli
