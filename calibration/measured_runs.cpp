#include "calibration/measured_runs.h"

#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/yaml_reader.h"
#include "calibration/training_log.h"
#include "export/import_megatron.h"
#include "planner/embedding_loss_split.h"
#include "planner/first_last_stages.h"
#include "planner/plan.h"
#include "planner/simulator.h"

namespace strata::calibration {

namespace {

// A row's value for `key`, else the file's defaults.
YAML::Node row_or_default(const YamlReader& row, const YAML::Node& defaults, const std::string& key) {
  if (row.has(key)) return row.node()[key];
  if (defaults.IsMap() && defaults[key]) return defaults[key];
  return YAML::Node();
}

// A path in the runs file, relative to the file's folder.
std::string relative_to(const std::string& file, const std::string& path) {
  const std::filesystem::path p(path);
  if (p.is_absolute() || file.empty()) return path;
  return (std::filesystem::path(file).parent_path() / p).string();
}

// A catalog name, or a path: relative to the runs file when such a file exists there.
std::string name_or_path(const std::string& file, const std::string& ref) {
  const std::string rel = relative_to(file, ref);
  return rel != ref && std::filesystem::is_regular_file(rel) ? rel : ref;
}

models::ModelSpec read_run_model(const YamlReader& row, const YAML::Node& node, std::string* name) {
  if (node.IsMap()) {
    *name = node["name"] ? node["name"].as<std::string>("") : "inline model";
    return models::read_model(YamlReader(node, row.source(), row.path() + ".model"));
  }
  if (!node.IsScalar()) row.fail("model", "expected a catalog name, a path or a model map");
  *name = node.as<std::string>();
  // A plan file (`strata plan --out`) names its model, as everywhere a model is taken.
  return planner::load_model_or_plan(name_or_path(row.source(), *name));
}

double measured_seconds(const YamlReader& row, const MeasuredRun& r) {
  YamlReader m = row.child("measured");
  m.expect_keys({"iteration_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu", "log", "skip", "peak_memory_gib"});
  const int given = (m.has("iteration_s") ? 1 : 0) + (m.has("tokens_per_s_per_gpu") ? 1 : 0) +
                    (m.has("model_tflops_per_gpu") ? 1 : 0) + (m.has("log") ? 1 : 0);
  if (given != 1)
    m.fail("", "give exactly one of iteration_s, tokens_per_s_per_gpu, model_tflops_per_gpu, log");
  const double gpus = static_cast<double>(r.strategy.gpus());
  const double tokens = static_cast<double>(r.strategy.global_batch) * static_cast<double>(r.model.seq_len);
  if (m.has("iteration_s")) return m.get_positive("iteration_s");
  if (m.has("log")) {
    const TrainingLog log = read_training_log(relative_to(row.source(), m.get_string("log")),
                                              static_cast<int>(m.get_int_in("skip", 0, 1000000, 1)));
    return log.tokens_per_s_per_gpu() ? tokens / (log.median * gpus) : log.median;
  }
  if (m.has("tokens_per_s_per_gpu")) return tokens / (m.get_positive("tokens_per_s_per_gpu") * gpus);
  // Model FLOPs per iteration as strata counts them (independent of any time estimate).
  const planner::Prediction p = predict_run(r, costmodel::TrainingLosses{});
  const double flops = p.model_tflops_per_gpu * 1e12 * gpus * p.iteration_s;
  return flops / (m.get_positive("model_tflops_per_gpu") * 1e12 * gpus);
}

// Megatron-LM's uneven splits, named by its flags: the embedding and / or loss counted as a
// layer (planner/embedding_loss_split.h), the first / last pipeline rank's blocks
// (planner/first_last_stages.h), or a --pipeline-model-parallel-layout string. Without the
// key strata balances the stages itself.
std::vector<std::vector<int>> read_pipeline_split(const YamlReader& split, const MeasuredRun& r) {
  split.expect_keys({"account_for_embedding", "account_for_loss", "first_stage_blocks", "last_stage_blocks", "layout"});
  const planner::Strategy& s = r.strategy;
  if (split.has("layout")) {  // --pipeline-model-parallel-layout, alone
    if (split.has("account_for_embedding") || split.has("account_for_loss") || split.has("first_stage_blocks") ||
        split.has("last_stage_blocks"))
      split.fail("layout", "cannot be combined with the other split keys (Megatron-LM's rule)");
    auto groups = exports::pipeline_layout_groups(split.get_string("layout"), r.model.layers, r.model.mtp_layers,
                                                  split.where("layout"));
    if (groups.size() != static_cast<std::size_t>(s.pp) * s.vpp)
      split.fail("layout", fmt::format("has {} virtual stages, strategy pp x vpp is {}", groups.size(),
                                       static_cast<std::int64_t>(s.pp) * s.vpp));
    return groups;
  }
  const planner::EmbeddingLossSplit counted{split.get_bool("account_for_embedding", false),
                                            split.get_bool("account_for_loss", false)};
  const bool first_last = split.has("first_stage_blocks") || split.has("last_stage_blocks");
  const std::string what = split.where();
  if (first_last && (counted.embedding || counted.loss))
    split.fail("account_for_embedding", "cannot be combined with first/last_stage_blocks (Megatron-LM's rule)");
  std::vector<std::int64_t> blocks;
  if (first_last) {
    planner::FirstLastStages fl;
    if (split.has("first_stage_blocks")) fl.first = split.get_int_in("first_stage_blocks", 1, r.model.layers);
    if (split.has("last_stage_blocks")) fl.last = split.get_int_in("last_stage_blocks", 1, r.model.layers);
    blocks = planner::first_last_stage_blocks(r.model.layers, s.pp, s.vpp, fl, what);
  } else {
    blocks = planner::embedding_loss_split_blocks(r.model.layers, s.pp, s.vpp, counted, what);
  }
  return planner::stage_layers_from_blocks(blocks, r.model.layers);
}

MeasuredRun read_run(const YamlReader& row, const YAML::Node& defaults, const std::string& file_source,
                     std::size_t index) {
  row.expect_keys({"id", "model", "cluster", "stack", "strategy", "precision", "measured", "source", "sweep",
                   "use", "gpus", "note", "job", "pipeline_split", "stack_settings"});
  MeasuredRun r;
  r.id = row.get_string("id", fmt::format("runs[{}]", index));
  r.source = row.get_string("source", file_source);
  if (r.source.empty()) row.fail("source", "every run needs a source (the row's or the file's `source:`)");
  r.sweep = row.get_string("sweep", "");
  r.fit = row.get_enum("use", {"fit", "check"}, "fit") == "fit";
  const YAML::Node cluster = row_or_default(row, defaults, "cluster");
  if (!cluster || !cluster.IsScalar()) row.fail("cluster", "missing (a catalog name or a path)");
  r.cluster_name = cluster.as<std::string>();
  r.cluster = costmodel::load_cluster(name_or_path(row.source(), r.cluster_name));
  const YAML::Node stack = row_or_default(row, defaults, "stack");
  r.stack_name = stack && stack.IsScalar() ? stack.as<std::string>()
                                           : costmodel::default_software_stack_name(r.cluster.device);
  try {
    r.stack = costmodel::load_software_stack(name_or_path(row.source(), r.stack_name),
                                             row.has("stack_settings") ? row.node()["stack_settings"] : YAML::Node(),
                                             "the row's stack_settings");
  } catch (const InputError& e) {
    if (!row.has("stack_settings")) throw;
    row.fail("stack_settings", e.what());
  }
  if (row.has("job")) {  // the job's own arguments in place of model + strategy
    if (row.has("model") || row.has("strategy")) row.fail("job", "give either job or model + strategy, not both");
    YamlReader job = row.child("job");
    job.expect_keys({"megatron", "world_size"});
    const std::string args = relative_to(row.source(), job.get_string("megatron"));
    exports::ImportedJob j = exports::import_megatron_args(read_file(args), args);
    exports::resolve_world_size(j, static_cast<int>(job.get_int_in("world_size", 0, 1 << 24, 0)), args);
    r.model = j.model;
    r.model_name = args;
    r.strategy = j.strategy;
    r.stage_layers = j.stage_layers;  // the job's own split (uneven stages, layouts)
    r.stack = exports::apply_overrides(r.stack, j.stack);
  } else {
    const YAML::Node model = row_or_default(row, defaults, "model");
    if (!model) row.fail("model", "missing (a catalog name, a path or a model map), or give job");
    r.model = read_run_model(row, model, &r.model_name);
    r.strategy = planner::strategy_from_yaml(row.child("strategy"));
    if (row.has("pipeline_split")) r.stage_layers = read_pipeline_split(row.child("pipeline_split"), r);
  }
  if (row.has("precision")) r.strategy.precision = row.get_enum("precision", {"bf16", "fp16", "fp8"});
  if (row.has("gpus") && row.get_int("gpus") != r.strategy.gpus())
    row.fail("gpus", fmt::format("{} but the strategy uses dp x tp x pp x cp = {}", row.get_int("gpus"),
                                 r.strategy.gpus()));
  try {
    planner::SimulateOptions o;
    o.stack = &r.stack;
    o.stage_layers = r.stage_layers;
    (void)planner::simulate(r.model, r.cluster, r.strategy, o);
  } catch (const InputError& e) {
    row.fail("strategy", e.what());
  }
  r.measured_s = measured_seconds(row, r);
  if (row.child("measured").has("peak_memory_gib")) {
    r.measured_memory_gib = row.child("measured").get_positive("peak_memory_gib");
    if (r.measured_memory_gib > r.cluster.device.memory_gib * 1.5)
      row.child("measured").fail("peak_memory_gib",
                                 fmt::format("{:g} GiB is far beyond the {:g} GiB of {}: not this device's peak",
                                             r.measured_memory_gib, r.cluster.device.memory_gib,
                                             r.cluster.device.name));
  }
  return r;
}

}  // namespace

std::string run_signature(const MeasuredRun& r) {
  const planner::Strategy& s = r.strategy;
  return fmt::format("{} on {} ({}) tp{} pp{} dp{} cp{} ep{} etp{} vpp{} mbs{} gbs{} zero{} {} sp{} {}",
                     r.model_name, r.cluster_name, r.stack_name, s.tp, s.pp, s.dp, s.cp, s.ep, s.etp, s.vpp,
                     s.micro_batch, s.global_batch, s.zero, planner::to_string(s.recompute),
                     s.sequence_parallel ? 1 : 0, s.precision.empty() ? "stack precision" : s.precision);
}

namespace {

// Runs files may include others (`include:`, paths relative to the including file) so that a
// device's dev set can be one file; this bounds a chain of them (and a file including itself).
constexpr int kMaxIncludeDepth = 8;

std::vector<MeasuredRun> parse_runs_file(const std::string& yaml_text, const std::string& source, int depth) {
  const YamlReader doc(parse_yaml(yaml_text, source), source);
  doc.expect_keys({"source", "defaults", "runs", "note", "include"});
  std::vector<MeasuredRun> out;
  if (doc.has("include")) {
    const YamlReader list = doc.child("include");
    list.expect_sequence();
    for (std::size_t i = 0; i < list.size(); ++i) {
      const YamlReader e = list.element(i);
      if (!e.node().IsScalar()) e.fail("", "expected the path of a runs file");
      if (depth >= kMaxIncludeDepth)
        e.fail("", fmt::format("runs files included more than {} deep (does a file include itself?)",
                               kMaxIncludeDepth));
      const std::string path = relative_to(source, e.node().Scalar());
      std::vector<MeasuredRun> rows = parse_runs_file(read_file(path), path, depth + 1);
      out.insert(out.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
    }
  }
  const std::string file_source = doc.get_string("source", "");
  const YAML::Node defaults = doc.has("defaults") ? doc.node()["defaults"] : YAML::Node(YAML::NodeType::Map);
  if (!defaults.IsMap()) doc.fail("defaults", "expected a map (model, cluster, stack)");
  if (doc.has("defaults")) doc.child("defaults").expect_keys({"model", "cluster", "stack"});
  if (!doc.has("runs") && out.empty()) doc.fail("runs", "missing: the list of measured runs");
  if (doc.has("runs")) {
    const YamlReader rows = doc.child("runs");
    rows.expect_sequence();
    if (rows.size() == 0 && out.empty()) rows.fail("", "no runs: list at least one measured job");
    for (std::size_t i = 0; i < rows.size(); ++i) out.push_back(read_run(rows.element(i), defaults, file_source, i));
  }
  return out;
}

}  // namespace

std::vector<MeasuredRun> parse_measured_runs(const std::string& yaml_text, const std::string& source) {
  std::vector<MeasuredRun> all = parse_runs_file(yaml_text, source, 0);
  std::vector<MeasuredRun> out;
  std::map<std::string, std::size_t> seen;
  for (MeasuredRun& r : all) {
    const std::string sig = run_signature(r);
    if (auto it = seen.find(sig); it != seen.end()) {
      const MeasuredRun& a = out[it->second];
      const double ratio = std::max(a.measured_s, r.measured_s) / std::min(a.measured_s, r.measured_s);
      if (ratio > 1.25)
        input_error("{}: runs {} and {} are the same job ({}) but measured {:.4g} s and {:.4g} s per iteration "
                    "({:.0f}% apart): contradictory rows; drop one or say what differs",
                    source, a.id, r.id, sig, a.measured_s, r.measured_s, 100 * (ratio - 1));
    }
    seen.emplace(sig, out.size());
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<MeasuredRun> load_measured_runs(const std::string& path) {
  return parse_measured_runs(read_file(path), path);
}

std::vector<MeasuredRun> runs_from_logs(const std::vector<std::string>& logs, const std::vector<std::string>& jobs,
                                        const std::string& cluster, const std::string& stack,
                                        const std::string& source) {
  if (logs.size() != jobs.size())
    input_error("--from-log and --job go in pairs (a log and the arguments of the job that wrote it): got {} "
                "log(s) and {} job(s)",
                logs.size(), jobs.size());
  if (logs.empty()) return {};
  if (cluster.empty()) input_error("--from-log needs --cluster (where the logged jobs ran)");
  YAML::Node doc;
  for (std::size_t i = 0; i < logs.size(); ++i) {
    YAML::Node row;
    row["id"] = logs[i];
    row["job"]["megatron"] = jobs[i];
    row["cluster"] = cluster;
    if (!stack.empty()) row["stack"] = stack;
    row["measured"]["log"] = logs[i];
    row["source"] = source;
    doc["runs"].push_back(row);
  }
  return parse_measured_runs(YAML::Dump(doc), "--from-log");
}

planner::Prediction predict_run(const MeasuredRun& run, const costmodel::TrainingLosses& losses) {
  costmodel::ClusterSpec c = run.cluster;
  c.device.training_losses = losses;
  planner::SimulateOptions o;
  o.stack = &run.stack;
  o.graphs = run.graphs;
  o.stage_layers = run.stage_layers;
  return planner::simulate(run.model, c, run.strategy, o).prediction;
}

double predict_run_s(const MeasuredRun& run, const costmodel::TrainingLosses& losses) {
  return predict_run(run, losses).iteration_s;
}

}  // namespace strata::calibration
