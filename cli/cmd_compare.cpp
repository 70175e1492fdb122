// `strata compare`: several strategies side by side (the planner's top K, a YAML list,
// or the plans of a `strata validate` run), each simulated with its timeline, rendered
// as a self-contained HTML page, a Markdown table or JSON.
#include <algorithm>
#include <cctype>
#include <climits>
#include <filesystem>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "report/report_data.h"
#include "report/report_html.h"
#include "report/report_json.h"
#include "report/report_markdown.h"
#include "report/strategy_list.h"
#include "common/atomic_file.h"
#include "common/checked_math.h"
#include "common/errors.h"
#include "planner/search.h"
#include "planner/simulator.h"
#include "planner/strategy.h"
#include "planner/trace_bounds.h"

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

std::string join(const std::vector<planner::Violation>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "; " : "") + v[i].message;
  return out;
}

// The format of the report: --format, else the extension of --report (.md / .markdown,
// .json, .html / .htm), else html for a file and md for stdout. A --format that contradicts
// the extension is refused rather than writing HTML into x.md.
std::string report_format(const std::string& path, const std::string& given) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string by_ext;
  if (ext == ".md" || ext == ".markdown") by_ext = "md";
  else if (ext == ".json") by_ext = "json";
  else if (ext == ".html" || ext == ".htm") by_ext = "html";
  if (path == "-") by_ext.clear();
  if (!given.empty()) {
    if (!by_ext.empty() && by_ext != given)
      input_error("--report {} names a {} file ({}) but --format is {}: use --format {} or a "
                  "--report path ending in .{}",
                  path, by_ext == "md" ? "Markdown" : by_ext == "json" ? "JSON" : "HTML", ext,
                  given, by_ext, given);
    return given;
  }
  if (!by_ext.empty()) return by_ext;
  return path == "-" ? "md" : "html";
}

struct Chosen {
  planner::Strategy strategy;
  std::vector<std::vector<int>> stage_layers;  // empty: partition by the planner
};

void run_compare(CompareFlags& f) {
  std::vector<PathFlag> inputs = model_cluster_inputs(f.mc);
  inputs.push_back({f.strategies, "--strategies"});
  inputs.push_back({f.measured, "--measured"});
  check_path_aliasing({{f.report, "--report"}}, inputs);
  if (f.report != "-") check_output_path(f.report, "--report");
  const std::string format = report_format(f.report, f.format);
  const TrainingTarget target = load_train_target(f.tt);

  const models::ModelSpec model = load_model_flag(f.mc);
  const costmodel::ClusterSpec cluster = load_cluster_flag(f.mc);
  const costmodel::SoftwareStack stack = load_stack_flag(f.mc, cluster);

  std::optional<MeasuredFile> measured;
  if (!f.measured.empty()) {
    measured = parse_measured_json(read_file(f.measured), f.measured);
    if (measured->model != model.name)
      warn(fmt::format("--measured {} was measured on model {}, this report is for {}", f.measured,
                       measured->model, model.name));
    if (measured->cluster != f.mc.cluster)
      warn(fmt::format("--measured {} was measured on cluster {}, this report is for {}", f.measured,
                       measured->cluster, f.mc.cluster));
  }
  // The measured plans are the strategies when neither --strategies nor --top chose them.
  const bool from_measured = measured && f.strategies.empty() && f.top_opt->count() == 0;
  if (f.gpus_opt->count() == 0) {
    if (from_measured) f.gpus = measured->ranks;
    else if (f.mc.cluster_given() || cluster.total_gpus() < kDefaultGpus)
      f.gpus = static_cast<int>(std::min<long long>(cluster.total_gpus(), INT_MAX));
  }
  if (f.batch_opt->count() == 0 && !f.mc.model_given()) f.global_batch = kDefaultGlobalBatch;

  ReportData data;
  data.model = model.name;
  data.cluster = f.mc.cluster;
  data.device = cluster.device.name;
  data.device_memory_gib = cluster.device.memory_gib;
  data.device_reserve_gib = cluster.device.reserve_gib;
  data.gpus = f.gpus;
  data.seq_len = model.seq_len;
  data.target = target;

  std::vector<Chosen> chosen;
  if (!f.strategies.empty() || from_measured) {
    std::vector<planner::Strategy> list;
    if (!f.strategies.empty()) {
      list = parse_strategy_list(read_file(f.strategies), f.strategies, f.gpus, f.global_batch);
      data.origin = f.strategies;
    } else {
      for (const auto& r : measured->runs) list.push_back(r.strategy);
      if (list.empty())
        input_error("--measured {}: its \"plans\" list is empty, so there is nothing to compare; "
                    "give --strategies FILE or --top K to choose the strategies", f.measured);
      data.origin = fmt::format("the plans measured in {}", f.measured);
    }
    // Without a global batch anywhere: the simulate default, rounded to micro_batch · dp.
    for (auto& s : list) {
      if (s.precision.empty()) s.precision = f.mc.precision;  // --precision, unless the entry sets one
      if (s.global_batch > 0) continue;
      const std::int64_t base = f.mc.model_given() ? 512 : kDefaultGlobalBatch;
      const std::int64_t step = checked_mul(s.micro_batch, static_cast<std::int64_t>(s.dp), "micro-batch x dp");
      s.global_batch = checked_mul((base + step - 1) / step, step, "global batch");
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      const auto& s = list[i];
      if (auto v = planner::validate(s, model); !v.empty())
        input_error("strategy {} ({}) is invalid for {}: {}", i + 1, strategy_label(s), model.name, join(v));
      if (s.gpus() > cluster.total_gpus())
        input_error("strategy {} ({}) needs {} GPUs but cluster {} has {}", i + 1, strategy_label(s), s.gpus(),
                    f.mc.cluster, cluster.total_gpus());
      chosen.push_back({s, {}});
    }
    if (from_measured) data.gpus = list.front().gpus();
  } else {
    planner::SearchOptions opt;
    opt.stack = &stack;
    opt.gpus = f.gpus;
    opt.global_batch = f.global_batch;
    opt.top_k = f.top;
    opt.precision = f.mc.precision;
    const planner::SearchResult r = planner::search(model, cluster, opt);
    if (r.ranked.empty())
      throw NoFeasiblePlan(fmt::format(
          "no strategy for {} fits on {} GPUs of {} ({} candidates over memory, {} rejected by "
          "constraints); `strata plan` with the same flags explains the tightest constraint",
          model.name, f.gpus, f.mc.cluster, r.infeasible_memory, r.invalid));
    for (const auto& c : r.ranked) chosen.push_back({c.strategy, c.stage_layers});
    data.origin = fmt::format("planner top {} of {} candidates", r.ranked.size(), r.candidates_evaluated);
  }

  for (std::size_t i = 0; i < chosen.size(); ++i) {
    planner::SimulateOptions so;
    so.stack = &stack;
    so.stage_layers = chosen[i].stage_layers;
    const auto sim = planner::simulate(model, cluster, chosen[i].strategy, so);
    ReportEntry e;
    e.strategy = chosen[i].strategy;
    e.prediction = sim.prediction;
    e.stage_layers = sim.stage_layers;
    data.entries.push_back(std::move(e));
  }
  // Timelines: recorded only where a Gantt chart is drawn (they are large; Markdown draws
  // none), and only when the charts stay within planner::kMaxTraceBytes.
  const int best = best_entry(data);
  const int showcase = pipelined_showcase(data);
  std::vector<std::size_t> charted;
  double events = 0;
  for (std::size_t i = 0; i < data.entries.size(); ++i) {
    const bool wanted = f.gantt == "all" || (f.gantt == "best" && (static_cast<int>(i) == best ||
                                                                   static_cast<int>(i) == showcase));
    if (!wanted || format == "md") continue;
    charted.push_back(i);
    events += planner::trace_event_estimate(data.entries[i].strategy);
  }
  // Bytes per timeline event in the report, measured (91 B in the HTML's SVG, 239 B in
  // the JSON) and rounded up.
  const double per_event = format == "json" ? 250 : 100;
  if (events * per_event > planner::kMaxTraceBytes)
    input_error("--gantt {}: the timelines of {} strateg{} would hold about {:.0f} events (~{:.0f} MB "
                "of {}), over the {:.0f} MB bound; use --gantt best or none, fewer strategies, or a "
                "smaller --global-batch (fewer micro-batches per step)",
                f.gantt, charted.size(), charted.size() == 1 ? "y" : "ies", events,
                events * per_event / 1e6, format, planner::kMaxTraceBytes / 1e6);
  for (const std::size_t i : charted) {
    planner::SimulateOptions so;
    so.stack = &stack;
    so.timeline = true;
    so.stage_layers = data.entries[i].stage_layers;
    data.entries[i].timeline = planner::simulate(model, cluster, data.entries[i].strategy, so).timeline;
  }

  if (measured) {
    data.measured_origin = f.measured;
    std::size_t matched = 0;
    for (const auto& r : measured->runs) {
      for (auto& e : data.entries)
        if (e.strategy == r.strategy && !e.measured) {
          e.measured = r.measured;
          ++matched;
          break;
        }
    }
    if (matched < measured->runs.size())
      warn(fmt::format("{} of {} measured plans in {} match none of the compared strategies",
                       measured->runs.size() - matched, measured->runs.size(), f.measured));
  }
  data.notes = provenance_notes(cluster);

  std::string text;
  if (format == "html") text = report_html(data);
  else if (format == "json") text = report_json(data);
  else text = report_markdown(data);
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
  cmd->add_option("--report,-o", f.report,
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
