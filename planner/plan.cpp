// Plan I/O: YAML (what `strata plan --out` writes and `strata train` / `strata export`
// read) and the DESIGN.md JSON object. Reading is strict: unknown keys are rejected and
// every cross-field rule (strategy valid for the model, rank grid = dp x tp x pp, the
// stage map covers layer groups 0..L+1 once each, in order) is checked with an error
// naming the file, line and field.
#include "planner/plan.h"

#include <cmath>
#include <filesystem>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/yaml_reader.h"

namespace strata::planner {

namespace {

constexpr int kSchemaVersion = 1;

// Shortest text that reads back to the same double; YAML spellings for non-finite values.
std::string yaml_double(double x) {
  if (std::isnan(x)) return ".nan";
  if (std::isinf(x)) return x > 0 ? ".inf" : "-.inf";
  return fmt::format("{}", x);
}

double read_double(const YamlReader& r, const std::string& key, double dflt) {
  if (!r.has(key)) return dflt;
  YAML::Node v = r.node()[key];
  if (v.IsScalar()) {
    const std::string& s = v.Scalar();
    if (s == ".nan" || s == ".NaN" || s == ".NAN") return std::numeric_limits<double>::quiet_NaN();
    if (s == ".inf" || s == ".Inf" || s == "+.inf") return std::numeric_limits<double>::infinity();
    if (s == "-.inf" || s == "-.Inf") return -std::numeric_limits<double>::infinity();
  }
  return r.get_double(key);
}

int read_int(const YamlReader& r, const std::string& key, int dflt, bool required) {
  constexpr std::int64_t lo = std::numeric_limits<int>::min(), hi = std::numeric_limits<int>::max();
  if (required) return static_cast<int>(r.get_int_in(key, lo, hi));
  return static_cast<int>(r.get_int_in(key, lo, hi, dflt));
}

Strategy read_strategy(const YamlReader& r) {
  r.expect_keys({"dp", "tp", "pp", "cp", "vpp", "micro_batch", "global_batch", "zero", "recompute",
                 "sequence_parallel", "schedule", "rank_order", "ep", "etp", "precision",
                 "recompute_modules", "recompute_layers", "ep_overlap", "delay_wgrad"});
  Strategy s;
  s.dp = read_int(r, "dp", 1, true);
  s.tp = read_int(r, "tp", 1, true);
  s.pp = read_int(r, "pp", 1, true);
  s.cp = read_int(r, "cp", 1, false);
  s.vpp = read_int(r, "vpp", 1, false);
  s.micro_batch = r.get_int("micro_batch");
  s.global_batch = r.get_int("global_batch");
  s.zero = read_int(r, "zero", 0, false);
  s.recompute = recompute_from_string(
      r.get_enum("recompute", {"none", "selective", "full"}, "none"));
  s.sequence_parallel = r.get_bool("sequence_parallel", false);
  s.schedule = schedule_from_string(r.get_enum(
      "schedule", {"gpipe", "1f1b", "interleaved"}, s.vpp > 1 ? "interleaved" : "1f1b"));
  s.rank_order = r.get_string("rank_order", "tp-dp-pp");
  s.ep = read_int(r, "ep", 1, false);
  s.etp = read_int(r, "etp", 1, false);
  if (r.has("precision")) s.precision = r.get_enum("precision", {"bf16", "fp16", "fp8"});
  s.ep_overlap = r.get_bool("ep_overlap", false);
  s.delay_wgrad = r.get_bool("delay_wgrad", false);
  s.recompute_layers = read_int(r, "recompute_layers", 0, false);
  if (r.has("recompute_modules")) {
    // A list of Megatron-Core module names (costmodel/recompute_modules.h).
    const YamlReader list = r.child("recompute_modules");
    list.expect_sequence();
    std::vector<std::string> names;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const YamlReader element = list.element(i);
      const YAML::Node n = element.node();
      if (!n.IsScalar()) r.fail("recompute_modules", "must be a list of module names");
      names.push_back(n.as<std::string>());
    }
    try {
      s.recompute_modules = costmodel::recompute_modules_from_names(names);
    } catch (const InputError& e) {
      r.fail("recompute_modules", e.what());
    }
  }
  return s;
}

Prediction read_prediction(const YamlReader& r) {
  r.expect_keys({"iteration_s", "tokens_per_s", "model_tflops_per_gpu", "hardware_tflops_per_gpu",
                 "mfu", "peak_memory_gib", "stage_memory_gib", "bubble_fraction", "breakdown_s",
                 "notes", "stack", "uncertainty", "uncertainty_range", "uncertainty_basis", "precision"});
  Prediction p;
  p.stack = r.get_string("stack", "");
  p.precision = r.get_string("precision", "");
  p.uncertainty = read_double(r, "uncertainty", -1);
  p.uncertainty_basis = r.get_string("uncertainty_basis", "");
  if (r.has("uncertainty_range")) {
    const YamlReader u = r.child("uncertainty_range");
    u.expect_sequence();
    if (u.size() != 2) u.fail("", "expected [low, high]: published / predicted step time");
    p.uncertainty_low = u.element(0).as_double();
    p.uncertainty_high = u.element(1).as_double();
    if (!(p.uncertainty_low > 0 && p.uncertainty_low <= 1 && p.uncertainty_high >= 1))
      u.fail("", "expected 0 < low <= 1 <= high");
  }
  // A stored prediction is a number the simulator wrote: a hand-edited or corrupted one
  // (negative or non-finite step time, MFU above 100%) would propagate to train's metrics,
  // compare and validate, so it is refused here by its field.
  const auto checked = [](const YamlReader& at, const std::string& key, double lo, double hi,
                           const char* what) {
    const double v = read_double(at, key, 0);
    if (!at.has(key)) return v;
    if (!std::isfinite(v) || v < lo || v > hi)
      at.fail(key, fmt::format("{} is not a possible {} (expected >= {}{}): the plan's prediction was "
                               "edited or corrupted; write the plan again with `strata simulate --out`",
                               v, what, lo,
                               std::isfinite(hi) ? fmt::format(" and <= {}", hi) : std::string()));
    return v;
  };
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // 0 is "not predicted" (a plan made by hand or by a tool that does not simulate).
  p.iteration_s = checked(r, "iteration_s", 0, kInf, "step time in seconds");
  p.tokens_per_s = checked(r, "tokens_per_s", 0, kInf, "token rate");
  p.model_tflops_per_gpu = checked(r, "model_tflops_per_gpu", 0, kInf, "TFLOP/s per GPU");
  p.hardware_tflops_per_gpu = checked(r, "hardware_tflops_per_gpu", 0, kInf, "TFLOP/s per GPU");
  p.mfu = checked(r, "mfu", 0, 1, "model FLOPs utilisation (a fraction of the peak)");
  p.peak_memory_gib = checked(r, "peak_memory_gib", 0, kInf, "memory in GiB");
  p.bubble_fraction = checked(r, "bubble_fraction", 0, 1, "bubble fraction");
  if (r.has("stage_memory_gib")) {
    YamlReader l = r.child("stage_memory_gib");
    l.expect_sequence();
    for (std::size_t i = 0; i < l.size(); ++i) {
      const YamlReader e = l.element(i);
      p.stage_memory_gib.push_back(e.as_double());
      if (!(p.stage_memory_gib.back() >= 0))
        e.fail("", fmt::format("{} is not a possible memory in GiB (expected >= 0)",
                               p.stage_memory_gib.back()));
    }
  }
  if (r.has("breakdown_s")) {
    YamlReader b = r.child("breakdown_s");
    b.expect_keys({"compute", "tp_comm", "cp_comm", "pp_comm", "dp_comm", "optimizer", "bubble",
                   "ep_comm", "straggler", "host_wait"});
    Breakdown& d = p.breakdown_s;
    const auto part = [&](const char* key) { return checked(b, key, 0, kInf, "time in seconds"); };
    d.compute = part("compute");
    d.tp_comm = part("tp_comm");
    d.cp_comm = part("cp_comm");
    d.pp_comm = part("pp_comm");
    d.dp_comm = part("dp_comm");
    d.optimizer = part("optimizer");
    d.bubble = part("bubble");
    d.ep_comm = part("ep_comm");
    d.straggler = part("straggler");
    d.host_wait = part("host_wait");
  }
  if (r.has("notes")) {
    YamlReader l = r.child("notes");
    l.expect_sequence();
    for (std::size_t i = 0; i < l.size(); ++i) {
      YamlReader e = l.element(i);
      if (!e.node().IsScalar()) e.fail("", "expected a string");
      p.notes.push_back(e.node().Scalar());
    }
  }
  return p;
}

std::vector<std::vector<int>> read_stage_layers(const YamlReader& r) {
  r.expect_sequence();
  std::vector<std::vector<int>> out;
  for (std::size_t v = 0; v < r.size(); ++v) {
    YamlReader s = r.element(v);
    s.expect_sequence();
    std::vector<int> groups;
    for (std::size_t i = 0; i < s.size(); ++i) {
      YamlReader g = s.element(i);
      const YAML::Node& n = g.node();
      long long x = 0;
      bool ok = n.IsScalar();
      if (ok) {
        try {
          std::size_t pos = 0;
          x = std::stoll(n.Scalar(), &pos, 10);
          ok = pos == n.Scalar().size() && x >= 0 && x <= std::numeric_limits<int>::max();
        } catch (...) {
          ok = false;
        }
      }
      if (!ok)
        g.fail("", fmt::format("expected a layer group index (0 = embedding, 1..L blocks, L+1 "
                               "head), got '{}'",
                               n.IsScalar() ? n.Scalar() : std::string("a non-scalar")));
      groups.push_back(static_cast<int>(x));
    }
    out.push_back(std::move(groups));
  }
  return out;
}

void emit_strategy(YAML::Emitter& e, const Strategy& s) {
  e << YAML::BeginMap;
  e << YAML::Key << "dp" << YAML::Value << s.dp;
  e << YAML::Key << "tp" << YAML::Value << s.tp;
  e << YAML::Key << "pp" << YAML::Value << s.pp;
  e << YAML::Key << "cp" << YAML::Value << s.cp;
  e << YAML::Key << "vpp" << YAML::Value << s.vpp;
  e << YAML::Key << "micro_batch" << YAML::Value << s.micro_batch;
  e << YAML::Key << "global_batch" << YAML::Value << s.global_batch;
  e << YAML::Key << "zero" << YAML::Value << s.zero;
  e << YAML::Key << "recompute" << YAML::Value << to_string(s.recompute);
  e << YAML::Key << "sequence_parallel" << YAML::Value << s.sequence_parallel;
  e << YAML::Key << "schedule" << YAML::Value << to_string(s.schedule);
  e << YAML::Key << "rank_order" << YAML::Value << s.rank_order;
  e << YAML::Key << "ep" << YAML::Value << s.ep;
  e << YAML::Key << "etp" << YAML::Value << s.etp;
  if (!s.precision.empty()) e << YAML::Key << "precision" << YAML::Value << s.precision;
  if (s.recompute_modules.any())
    e << YAML::Key << "recompute_modules" << YAML::Value << YAML::Flow
      << costmodel::recompute_module_names(s.recompute_modules);
  if (s.recompute_layers > 0) e << YAML::Key << "recompute_layers" << YAML::Value << s.recompute_layers;
  if (s.ep_overlap) e << YAML::Key << "ep_overlap" << YAML::Value << true;
  if (s.delay_wgrad) e << YAML::Key << "delay_wgrad" << YAML::Value << true;
  e << YAML::EndMap;
}

void emit_prediction(YAML::Emitter& e, const Prediction& p) {
  e << YAML::BeginMap;
  if (!p.stack.empty()) e << YAML::Key << "stack" << YAML::Value << p.stack;
  if (!p.precision.empty()) e << YAML::Key << "precision" << YAML::Value << p.precision;
  e << YAML::Key << "iteration_s" << YAML::Value << yaml_double(p.iteration_s);
  if (p.uncertainty >= 0) {
    e << YAML::Key << "uncertainty" << YAML::Value << yaml_double(p.uncertainty);
    e << YAML::Key << "uncertainty_range" << YAML::Value << YAML::Flow << YAML::BeginSeq
      << yaml_double(p.uncertainty_low) << yaml_double(p.uncertainty_high) << YAML::EndSeq;
    e << YAML::Key << "uncertainty_basis" << YAML::Value << p.uncertainty_basis;
  }
  e << YAML::Key << "tokens_per_s" << YAML::Value << yaml_double(p.tokens_per_s);
  e << YAML::Key << "model_tflops_per_gpu" << YAML::Value << yaml_double(p.model_tflops_per_gpu);
  e << YAML::Key << "hardware_tflops_per_gpu" << YAML::Value
    << yaml_double(p.hardware_tflops_per_gpu);
  e << YAML::Key << "mfu" << YAML::Value << yaml_double(p.mfu);
  e << YAML::Key << "peak_memory_gib" << YAML::Value << yaml_double(p.peak_memory_gib);
  e << YAML::Key << "stage_memory_gib" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (double x : p.stage_memory_gib) e << yaml_double(x);
  e << YAML::EndSeq;
  e << YAML::Key << "bubble_fraction" << YAML::Value << yaml_double(p.bubble_fraction);
  e << YAML::Key << "breakdown_s" << YAML::Value << YAML::BeginMap;
  const Breakdown& b = p.breakdown_s;
  e << YAML::Key << "compute" << YAML::Value << yaml_double(b.compute);
  e << YAML::Key << "tp_comm" << YAML::Value << yaml_double(b.tp_comm);
  e << YAML::Key << "cp_comm" << YAML::Value << yaml_double(b.cp_comm);
  e << YAML::Key << "pp_comm" << YAML::Value << yaml_double(b.pp_comm);
  e << YAML::Key << "dp_comm" << YAML::Value << yaml_double(b.dp_comm);
  e << YAML::Key << "optimizer" << YAML::Value << yaml_double(b.optimizer);
  e << YAML::Key << "bubble" << YAML::Value << yaml_double(b.bubble);
  e << YAML::Key << "ep_comm" << YAML::Value << yaml_double(b.ep_comm);
  if (b.straggler > 0) e << YAML::Key << "straggler" << YAML::Value << yaml_double(b.straggler);
  if (b.host_wait > 0) e << YAML::Key << "host_wait" << YAML::Value << yaml_double(b.host_wait);
  e << YAML::EndMap;
  e << YAML::Key << "notes" << YAML::Value << YAML::BeginSeq;
  for (const auto& n : p.notes) e << YAML::DoubleQuoted << n;
  e << YAML::EndSeq;
  e << YAML::EndMap;
}

// nlohmann writes NaN/inf as null; keep that (JSON has no spelling for them).
nlohmann::ordered_json json_number(double x) {
  if (!std::isfinite(x)) return nullptr;
  return x;
}

}  // namespace

Strategy strategy_from_yaml(const YamlReader& r) { return read_strategy(r); }

std::vector<std::vector<int>> even_stage_layers(const models::ModelSpec& m, int pp, int vpp) {
  if (pp < 1) input_error("strategy.pp ({}) must be >= 1", pp);
  if (vpp < 1) input_error("strategy.vpp ({}) must be >= 1", vpp);
  const std::int64_t nv = static_cast<std::int64_t>(pp) * vpp;
  if (m.layers < nv)
    input_error("model.layers ({}) must be >= strategy.pp ({}) x strategy.vpp ({})", m.layers, pp,
                vpp);
  const int stages = static_cast<int>(nv);
  const std::int64_t base = m.layers / stages;
  std::int64_t extra = m.layers % stages;
  // Extra blocks go to the middle stages first (1, 2, ...), then the first, then the
  // last: the first stage also holds the embedding and the last the LM head.
  std::vector<std::int64_t> count(stages, base);
  for (int v = 1; v < stages - 1 && extra > 0; ++v, --extra) ++count[v];
  if (extra > 0) {
    ++count[0];
    --extra;
  }
  if (extra > 0) ++count[stages - 1];
  std::vector<std::vector<int>> out(stages);
  int next = 1;
  for (int v = 0; v < stages; ++v) {
    if (v == 0) out[v].push_back(0);
    for (std::int64_t i = 0; i < count[v]; ++i) out[v].push_back(next++);
    if (v == stages - 1) out[v].push_back(next);
  }
  return out;
}

void check_stage_layers(const std::vector<std::vector<int>>& stage_layers,
                        const models::ModelSpec& m, int pp, int vpp) {
  const std::int64_t nv = static_cast<std::int64_t>(pp) * vpp;
  if (static_cast<std::int64_t>(stage_layers.size()) != nv)
    input_error("stage_layers has {} virtual stages, expected strategy.pp ({}) x strategy.vpp "
                "({}) = {}",
                stage_layers.size(), pp, vpp, nv);
  const std::int64_t last = m.layers + 1;
  std::int64_t expected = 0;
  for (std::size_t v = 0; v < stage_layers.size(); ++v) {
    if (stage_layers[v].empty())
      input_error("stage_layers[{}] is empty: every virtual stage needs at least one layer group",
                  v);
    for (std::size_t i = 0; i < stage_layers[v].size(); ++i) {
      const int g = stage_layers[v][i];
      if (g != expected)
        input_error("stage_layers[{}][{}] is {}, expected {}: layer groups 0 (embedding), 1..{} "
                    "(blocks) and {} (LM head) must appear once each, in order, contiguous per "
                    "virtual stage",
                    v, i, g, expected, m.layers, last);
      ++expected;
    }
  }
  if (expected != last + 1)
    input_error("stage_layers ends at layer group {}, expected {} (the LM head of a {}-layer model)",
                expected - 1, last, m.layers);
}

std::vector<std::int64_t> blocks_per_stage(const std::vector<std::vector<int>>& stage_layers,
                                           const models::ModelSpec& m) {
  std::vector<std::int64_t> out;
  for (const auto& s : stage_layers) {
    std::int64_t n = 0;
    for (int g : s) n += (g >= 1 && g <= m.layers) ? 1 : 0;
    out.push_back(n);
  }
  return out;
}

std::string plan_to_yaml(const Plan& p) {
  YAML::Emitter e;
  e << YAML::Comment(
      "strata plan: model, cluster, strategy, layer->stage map, rank grid, prediction.\n"
      "stage_layers[v] lists the layer groups of virtual stage v = chunk * pp + stage\n"
      "(group 0 = embedding, 1..L = transformer blocks, L+1 = final norm + LM head).");
  e << YAML::BeginMap;
  e << YAML::Key << "schema_version" << YAML::Value << p.schema_version;
  e << YAML::Key << "model" << YAML::Value << YAML::Load(models::to_yaml(p.model));
  e << YAML::Key << "cluster" << YAML::Value << p.cluster;
  e << YAML::Key << "gpus" << YAML::Value << p.strategy.gpus();
  e << YAML::Key << "strategy" << YAML::Value;
  emit_strategy(e, p.strategy);
  e << YAML::Key << "rank_grid" << YAML::Value << YAML::Flow << YAML::BeginMap;
  e << YAML::Key << "dp" << YAML::Value << p.strategy.dp;
  e << YAML::Key << "tp" << YAML::Value << p.strategy.tp;
  e << YAML::Key << "pp" << YAML::Value << p.strategy.pp;
  e << YAML::Key << "cp" << YAML::Value << p.strategy.cp;
  e << YAML::Key << "order" << YAML::Value << p.strategy.rank_order;
  e << YAML::EndMap;
  e << YAML::Key << "stage_layers" << YAML::Value << YAML::BeginSeq;
  for (const auto& s : p.stage_layers) {
    e << YAML::Flow << YAML::BeginSeq;
    for (int g : s) e << g;
    e << YAML::EndSeq;
  }
  e << YAML::EndSeq;
  e << YAML::Key << "prediction" << YAML::Value;
  emit_prediction(e, p.prediction);
  e << YAML::Key << "fits_memory" << YAML::Value << p.prediction.fits_memory;
  e << YAML::EndMap;
  STRATA_CHECK(e.good(), "YAML emitter failed: {}", e.GetLastError());
  return std::string(e.c_str()) + "\n";
}

std::string plan_to_json(const Plan& p) {
  using J = nlohmann::ordered_json;
  const Strategy& s = p.strategy;
  const Prediction& q = p.prediction;
  J j;
  j["schema_version"] = p.schema_version;
  j["model"] = p.model.name;
  j["seq_len"] = p.model.seq_len;
  j["cluster"] = p.cluster;
  j["gpus"] = s.gpus();
  j["strategy"] = J{{"dp", s.dp},
                    {"tp", s.tp},
                    {"pp", s.pp},
                    {"cp", s.cp},
                    {"vpp", s.vpp},
                    {"micro_batch", s.micro_batch},
                    {"global_batch", s.global_batch},
                    {"zero", s.zero},
                    {"recompute", to_string(s.recompute)},
                    {"sequence_parallel", s.sequence_parallel},
                    {"schedule", to_string(s.schedule)},
                    {"ep", s.ep},
                    {"etp", s.etp}};
  if (!s.precision.empty()) j["strategy"]["precision"] = s.precision;
  if (s.recompute_modules.any()) j["strategy"]["recompute_modules"] = costmodel::recompute_module_names(s.recompute_modules);
  if (s.recompute_layers > 0) j["strategy"]["recompute_layers"] = s.recompute_layers;
  if (s.ep_overlap) j["strategy"]["ep_overlap"] = true;
  if (s.delay_wgrad) j["strategy"]["delay_wgrad"] = true;
  // The precision simulated: the strategy's, else the stack's.
  if (const std::string prec = !s.precision.empty() ? s.precision : q.precision; !prec.empty())
    j["precision"] = prec;
  const Breakdown& b = q.breakdown_s;
  j["prediction"] = J{{"iteration_s", json_number(q.iteration_s)},
                      {"tokens_per_s", json_number(q.tokens_per_s)},
                      {"model_tflops_per_gpu", json_number(q.model_tflops_per_gpu)},
                      {"hardware_tflops_per_gpu", json_number(q.hardware_tflops_per_gpu)},
                      {"mfu", json_number(q.mfu)},
                      {"peak_memory_gib", json_number(q.peak_memory_gib)},
                      {"bubble_fraction", json_number(q.bubble_fraction)},
                      {"breakdown_s", J{{"compute", json_number(b.compute)},
                                        {"tp_comm", json_number(b.tp_comm)},
                                        {"cp_comm", json_number(b.cp_comm)},
                                        {"pp_comm", json_number(b.pp_comm)},
                                        {"dp_comm", json_number(b.dp_comm)},
                                        {"optimizer", json_number(b.optimizer)},
                                        {"bubble", json_number(b.bubble)},
                                        {"ep_comm", json_number(b.ep_comm)},
                                        {"straggler", json_number(b.straggler)},
                                        {"host_wait", json_number(b.host_wait)}}}};
  j["stack"] = q.stack;
  {
    const MemoryBreakdown& m = q.peak_memory;
    j["prediction"]["peak_memory_parts_gib"] =
        J{{"stage", m.stage},
          {"weights", json_number(m.weights)},
          {"grads", json_number(m.grads)},
          {"optimizer", json_number(m.optimizer)},
          {"activations", json_number(m.activations)},
          {"logits", json_number(m.logits)},
          {"reserve", json_number(m.reserve)},
          {"optimizer_step_extra", json_number(m.step_extra)},
          {"optimizer_step_grad_copy", json_number(m.step_grad_copy)},
          {"recompute_layer", json_number(m.recompute_layer)},
          {"in_flight", m.in_flight}};
    // What of the sums above the routed experts and the multi-token prediction hold.
    J& parts = j["prediction"]["peak_memory_parts_gib"];
    if (p.model.moe) {
      parts["expert_weights"] = json_number(m.expert_weights);
      parts["expert_grads_optimizer"] = json_number(m.expert_grads_optimizer);
      parts["dispatch_activations"] = json_number(m.dispatch_activations);
    }
    if (p.model.mtp_layers > 0) parts["mtp"] = json_number(m.mtp);
  }
  j["prediction"]["uncertainty"] =
      q.uncertainty >= 0
          ? J{{"relative", json_number(q.uncertainty)},
              {"low_s", json_number(q.iteration_s * q.uncertainty_low)},
              {"high_s", json_number(q.iteration_s * q.uncertainty_high)},
              {"basis", q.uncertainty_basis}}
          : J(nullptr);
  j["fits_memory"] = q.fits_memory;
  j["stage_layers"] = p.stage_layers;
  return j.dump(2);
}

Plan parse_plan_yaml(const std::string& text, const std::string& source) {
  YamlReader r(parse_yaml(text, source), source);
  r.expect_map();
  r.expect_keys({"schema_version", "model", "cluster", "gpus", "strategy", "rank_grid",
                 "stage_layers", "prediction", "fits_memory"});
  // A plan strata wrote (its first line is the header comment) has every section through
  // fits_memory; one that stops early was cut off (an interrupted copy): refuse it rather
  // than train or export with defaults in place of the lost lines. Hand-written plans may
  // leave out the optional sections.
  if (text.rfind("# strata plan:", 0) == 0)
    for (const char* key : {"model", "cluster", "gpus", "strategy", "rank_grid", "stage_layers",
                            "prediction", "fits_memory"})
      if (!r.has(key))
        throw InputError(fmt::format("{}: has no '{}' but was written by strata (first line), "
                                     "which writes every section through fits_memory: the file "
                                     "looks truncated", source, key));
  Plan p;
  // Compared as read (64-bit): narrowing first would let 4294967297 pass as 1.
  const std::int64_t version = r.get_int("schema_version");
  if (version != kSchemaVersion)
    r.fail("schema_version", fmt::format("{} is not supported (this strata reads schema_version {})",
                                         version, kSchemaVersion));
  p.schema_version = kSchemaVersion;
  p.model = models::read_model(r.child("model"));
  p.cluster = r.get_string("cluster");
  if (p.cluster.empty()) r.fail("cluster", "must name the cluster the plan was made for");

  YamlReader sr = r.child("strategy");
  p.strategy = read_strategy(sr);
  if (auto v = validate(p.strategy, p.model, r.has("stage_layers") ? StageSplit::Given : StageSplit::Strata);
      !v.empty()) {
    std::string msg;
    for (const auto& x : v) msg += (msg.empty() ? "" : "; ") + x.message;
    const std::string key = v.front().field.rfind("strategy.", 0) == 0
                                ? v.front().field.substr(std::string("strategy.").size())
                                : std::string();
    sr.fail(sr.has(key) ? key : "", msg);
  }
  const Strategy& s = p.strategy;
  if (r.has("gpus")) {
    const std::int64_t g = r.get_int("gpus");
    if (g != s.gpus())
      r.fail("gpus", fmt::format("{} must equal strategy.dp x tp x pp x cp = {} x {} x {} x {} = {}", g,
                                 s.dp, s.tp, s.pp, s.cp, s.gpus()));
  }
  if (r.has("rank_grid")) {
    YamlReader g = r.child("rank_grid");
    g.expect_keys({"dp", "tp", "pp", "cp", "order"});
    const std::pair<const char*, int> axes[] = {{"dp", s.dp}, {"tp", s.tp}, {"pp", s.pp}, {"cp", s.cp}};
    std::int64_t product = 1;
    for (const auto& [k, want] : axes) {
      const std::int64_t got = std::string(k) == "cp" ? g.get_int(k, 1) : g.get_int(k);
      if (got != want)
        g.fail(k, fmt::format("{} must equal strategy.{} ({})", got, k, want));
      product *= got;
    }
    if (product != s.gpus())
      g.fail("", fmt::format("dp x tp x pp x cp = {} must equal the GPU count {}", product, s.gpus()));
    const std::string order = g.get_string("order", s.rank_order);
    if (order != s.rank_order)
      g.fail("order", fmt::format("'{}' must equal strategy.rank_order ('{}')", order, s.rank_order));
  }
  if (r.has("stage_layers")) {
    YamlReader sl = r.child("stage_layers");
    p.stage_layers = read_stage_layers(sl);
    try {
      check_stage_layers(p.stage_layers, p.model, s.pp, s.vpp);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}:{}: {}", source, sl.node().Mark().line + 1, e.what()));
    }
  } else {
    p.stage_layers = even_stage_layers(p.model, s.pp, s.vpp);
  }
  if (r.has("prediction")) p.prediction = read_prediction(r.child("prediction"));
  p.prediction.fits_memory = r.get_bool("fits_memory", true);
  if (!p.prediction.stage_memory_gib.empty() &&
      static_cast<int>(p.prediction.stage_memory_gib.size()) != s.pp)
    r.child("prediction").fail("stage_memory_gib",
                               fmt::format("has {} entries, expected one per pipeline stage ({})",
                                           p.prediction.stage_memory_gib.size(), s.pp));
  return p;
}

Plan load_plan(const std::string& path) { return parse_plan_yaml(read_file(path), path); }

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
  return is_plan_file(name_or_path) ? load_plan(name_or_path).model : models::load_model(name_or_path);
}

}  // namespace strata::planner
