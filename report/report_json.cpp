#include "report/report_json.h"
#include "common/json_text.h"

#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "common/errors.h"
#include "costmodel/recompute_modules.h"

namespace strata::report {

nlohmann::json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

namespace {

using nlohmann::json;

template <typename T>
T get_key(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) input_error("{}: missing key '{}'", where, key);
  // Integers are range-checked before narrowing (json::get<int> wraps 4294967297 to 1).
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return json_int<T>(j.at(key), fmt::format("{}: key '{}'", where, key));
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    input_error("{}: key '{}' has the wrong type ({})", where, key, j.at(key).dump());
  }
}

}  // namespace

json strategy_to_json(const planner::Strategy& s) {
  json j{{"dp", s.dp},
         {"tp", s.tp},
         {"pp", s.pp},
         {"cp", s.cp},
         {"ep", s.ep},
         {"etp", s.etp},
         {"vpp", s.vpp},
         {"micro_batch", s.micro_batch},
         {"global_batch", s.global_batch},
         {"zero", s.zero},
         {"recompute", recompute_name(s.recompute)},
         {"sequence_parallel", s.sequence_parallel},
         {"schedule", schedule_name(s.schedule)},
         {"rank_order", s.rank_order}};
  if (!s.precision.empty()) j["precision"] = s.precision;
  // What a layout of the same dimensions runs differently, when set (plan-output.schema.json).
  if (s.recompute_modules.any()) j["recompute_modules"] = costmodel::recompute_module_names(s.recompute_modules);
  if (s.recompute_layers > 0) j["recompute_layers"] = s.recompute_layers;
  if (s.ep_overlap) j["ep_overlap"] = true;
  if (s.delay_wgrad) j["delay_wgrad"] = true;
  return j;
}

planner::Strategy strategy_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) input_error("{}: expected a strategy object, got {}", where, j.dump());
  planner::Strategy s;
  s.dp = get_key<int>(j, "dp", where);
  s.tp = get_key<int>(j, "tp", where);
  s.pp = get_key<int>(j, "pp", where);
  // cp, ep and etp: absent in files written before they were part of the strategy (1).
  if (j.contains("cp")) s.cp = get_key<int>(j, "cp", where);
  if (j.contains("ep")) s.ep = get_key<int>(j, "ep", where);
  if (j.contains("etp")) s.etp = get_key<int>(j, "etp", where);
  s.vpp = get_key<int>(j, "vpp", where);
  s.micro_batch = get_key<std::int64_t>(j, "micro_batch", where);
  s.global_batch = get_key<std::int64_t>(j, "global_batch", where);
  s.zero = get_key<int>(j, "zero", where);
  s.sequence_parallel = get_key<bool>(j, "sequence_parallel", where);
  const auto rc = get_key<std::string>(j, "recompute", where);
  if (rc == "none") s.recompute = planner::Recompute::None;
  else if (rc == "selective") s.recompute = planner::Recompute::Selective;
  else if (rc == "full") s.recompute = planner::Recompute::Full;
  else input_error("{}: recompute '{}' is not one of none, selective, full", where, rc);
  const auto sc = get_key<std::string>(j, "schedule", where);
  if (sc == "gpipe") s.schedule = planner::ScheduleKind::GPipe;
  else if (sc == "1f1b") s.schedule = planner::ScheduleKind::OneFOneB;
  else if (sc == "interleaved") s.schedule = planner::ScheduleKind::Interleaved;
  else input_error("{}: schedule '{}' is not one of gpipe, 1f1b, interleaved", where, sc);
  if (j.contains("rank_order")) s.rank_order = get_key<std::string>(j, "rank_order", where);
  if (j.contains("precision")) s.precision = get_key<std::string>(j, "precision", where);
  if (j.contains("recompute_modules")) {
    try {
      s.recompute_modules =
          costmodel::recompute_modules_from_names(get_key<std::vector<std::string>>(j, "recompute_modules", where));
    } catch (const InputError& e) {
      input_error("{}: {}", where, e.what());
    }
  }
  if (j.contains("recompute_layers")) s.recompute_layers = get_key<int>(j, "recompute_layers", where);
  if (j.contains("ep_overlap")) s.ep_overlap = get_key<bool>(j, "ep_overlap", where);
  if (j.contains("delay_wgrad")) s.delay_wgrad = get_key<bool>(j, "delay_wgrad", where);
  return s;
}

json prediction_to_json(const planner::Prediction& p) {
  const auto& b = p.breakdown_s;
  json stages = json::array();
  for (double g : p.stage_memory_gib) stages.push_back(number_or_null(g));
  return json{{"iteration_s", number_or_null(p.iteration_s)},
              {"tokens_per_s", number_or_null(p.tokens_per_s)},
              {"model_tflops_per_gpu", number_or_null(p.model_tflops_per_gpu)},
              {"hardware_tflops_per_gpu", number_or_null(p.hardware_tflops_per_gpu)},
              {"mfu", number_or_null(p.mfu)},
              {"peak_memory_gib", number_or_null(p.peak_memory_gib)},
              {"stage_memory_gib", stages},
              {"bubble_fraction", number_or_null(p.bubble_fraction)},
              {"breakdown_s",
               {{"compute", number_or_null(b.compute)},
                {"tp_comm", number_or_null(b.tp_comm)},
                {"cp_comm", number_or_null(b.cp_comm)},
                {"pp_comm", number_or_null(b.pp_comm)},
                {"dp_comm", number_or_null(b.dp_comm)},
                {"optimizer", number_or_null(b.optimizer)},
                {"bubble", number_or_null(b.bubble)},
                {"ep_comm", number_or_null(b.ep_comm)},
                {"straggler", number_or_null(b.straggler)},
                {"host_wait", number_or_null(b.host_wait)}}}};
}

MeasuredFile parse_measured_json(const std::string& text, const std::string& source) {
  json j;
  try {
    j = strata::parse_json(text);
  } catch (const json::exception& e) {
    input_error("{}: not JSON (expected `strata validate --format json` output): {}", source, e.what());
  }
  if (!j.is_object() || j.value("command", "") != "validate" || !j.contains("plans") ||
      !j["plans"].is_array())
    input_error("{}: expected the JSON object of `strata validate --format json` "
                "(\"command\": \"validate\", \"plans\": [...])", source);
  MeasuredFile f;
  f.model = get_key<std::string>(j, "model", source);
  f.cluster = get_key<std::string>(j, "cluster", source);
  f.ranks = get_key<int>(j, "ranks", source);
  if (j.contains("host") && j["host"].is_string()) f.host = j["host"].get<std::string>();
  if (j.contains("host_cores") && !j["host_cores"].is_null()) {
    f.host_cores = get_key<int>(j, "host_cores", source);
    if (f.host_cores < 0) input_error("{}: host_cores ({}) must be >= 0", source, f.host_cores);
  }
  for (std::size_t i = 0; i < j["plans"].size(); ++i) {
    const auto& p = j["plans"][i];
    const std::string where = fmt::format("{}: plans[{}]", source, i);
    if (!p.is_object()) input_error("{}: expected an object", where);
    MeasuredRun r;
    r.name = p.value("name", "");
    r.model = p.value("model", "");
    r.strategy = strategy_from_json(p.contains("strategy") ? p["strategy"] : json(), where + ".strategy");
    r.measured.status = get_key<std::string>(p, "status", where);
    r.measured.error = p.value("error", "");
    if (p.contains("host_load_1m") && !p["host_load_1m"].is_null()) {
      r.measured.host_load_1m = get_key<double>(p, "host_load_1m", where);
      if (!(r.measured.host_load_1m >= 0 && r.measured.host_load_1m < 1e6))
        input_error("{}: host_load_1m ({}) must be a load average >= 0", where, r.measured.host_load_1m);
    }
    if (r.measured.status == "ok") {
      r.measured.step_s = get_key<double>(p, "measured_step_s", where);
      if (!(r.measured.step_s > 0)) input_error("{}: measured_step_s ({}) must be > 0", where, r.measured.step_s);
    }
    f.runs.push_back(std::move(r));
  }
  return f;
}

std::string report_json(const ReportData& d) {
  const int best = best_entry(d);
  json entries = json::array();
  for (std::size_t i = 0; i < d.entries.size(); ++i) {
    const auto& e = d.entries[i];
    json measured = nullptr;
    if (e.measured) {
      measured = json{{"status", e.measured->status},
                      {"step_s", e.measured->status == "ok" ? json(e.measured->step_s) : json(nullptr)},
                      {"abs_error_pct", e.measured->status == "ok"
                                            ? number_or_null(abs_error_pct(e.prediction.iteration_s,
                                                                           e.measured->step_s))
                                            : json(nullptr)},
                      {"error", e.measured->error},
                      {"host_load_1m", e.measured->host_load_1m >= 0 ? json(e.measured->host_load_1m) : json(nullptr)}};
    }
    // Timelines of big runs (10^5+ events) would make a file of tens of MB: those are
    // left to `strata simulate --trace`.
    constexpr std::size_t kMaxTimelineEvents = 50000;
    json timeline = e.timeline.size() > kMaxTimelineEvents ? json(nullptr) : json::array();
    if (e.timeline.size() <= kMaxTimelineEvents)
      for (const auto& ev : e.timeline)
        timeline.push_back(json{{"stage", ev.stage},
                                {"stream", ev.stream},
                                {"name", ev.name},
                                {"microbatch", ev.microbatch},
                                {"chunk", ev.chunk},
                                {"start_s", ev.start_s},
                                {"end_s", ev.end_s}});
    entries.push_back(json{{"index", i + 1},
                           {"label", strategy_label(e.strategy)},
                           {"best", static_cast<int>(i) == best},
                           {"strategy", strategy_to_json(e.strategy)},
                           {"prediction", prediction_to_json(e.prediction)},
                           {"fits_memory", e.prediction.fits_memory},
                           {"stage_layers", e.stage_layers},
                           {"measured", measured},
                           {"timeline_events", e.timeline.size()},
                           {"timeline", timeline}});
    if (d.target.given())
      entries.back()["time_to_train"] =
          json(time_to_train_json(time_to_train(e.strategy, e.prediction, d.seq_len, d.target)));
  }
  json out{{"schema_version", 1},
           {"command", "compare"},
           {"command_line", d.command_line},
           {"model", d.model},
           {"cluster", d.cluster},
           {"device", d.device},
           {"device_memory_gib", d.device_memory_gib},
           {"device_reserve_gib", d.device_reserve_gib},
           {"gpus", d.gpus},
           {"seq_len", d.seq_len},
           {"origin", d.origin},
           {"measured_origin", d.measured_origin},
           {"measured_conditions", measured_conditions(d)},
           {"notes", d.notes},
           {"best_index", best >= 0 ? json(best + 1) : json(nullptr)},
           {"strategies", entries}};
  return out.dump(2) + "\n";
}

}  // namespace strata::report
