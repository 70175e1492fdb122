// Chrome / Perfetto trace of a simulated iteration (JSON object format): one process per
// pipeline stage ("stage p"), one thread per stream, complete events ("ph": "X") with
// timestamps and durations in microseconds. Opens in ui.perfetto.dev or chrome://tracing.
#include <array>
#include <string>

#include <nlohmann/json.hpp>

#include "planner/simulator.h"

namespace strata::planner {

namespace {

constexpr std::array<const char*, 7> kStreams = {"compute", "tp_comm", "pp_comm", "dp_comm",
                                                 "optimizer", "ep_comm", "cp_comm"};

int stream_tid(const std::string& s) {
  for (std::size_t i = 0; i < kStreams.size(); ++i)
    if (s == kStreams[i]) return static_cast<int>(i);
  return static_cast<int>(kStreams.size());  // unknown streams share one extra thread
}

}  // namespace

std::string chrome_trace_json(const SimulationResult& result, const std::string& title) {
  using nlohmann::json;
  json events = json::array();
  int stages = static_cast<int>(result.prediction.stage_memory_gib.size());
  for (const auto& e : result.timeline) stages = std::max(stages, e.stage + 1);
  for (int p = 0; p < stages; ++p) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", p}, {"tid", 0},
                      {"args", {{"name", "stage " + std::to_string(p)}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", p}, {"tid", 0},
                      {"args", {{"sort_index", p}}}});
    for (std::size_t t = 0; t < kStreams.size(); ++t)
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", p},
                        {"tid", static_cast<int>(t)}, {"args", {{"name", kStreams[t]}}}});
  }
  for (const auto& e : result.timeline) {
    json args = {{"chunk", e.chunk}};
    if (e.microbatch >= 0) args["microbatch"] = e.microbatch;
    events.push_back({{"name", e.name},
                      {"cat", e.stream},
                      {"ph", "X"},
                      {"pid", e.stage},
                      {"tid", stream_tid(e.stream)},
                      {"ts", e.start_s * 1e6},
                      {"dur", (e.end_s - e.start_s) * 1e6},
                      {"args", std::move(args)}});
  }
  const Prediction& p = result.prediction;
  json doc = {{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ms"},
              {"otherData",
               {{"title", title},
                {"iteration_s", p.iteration_s},
                {"bubble_fraction", p.bubble_fraction},
                {"peak_memory_gib", p.peak_memory_gib}}}};
  return doc.dump(1);
}

}  // namespace strata::planner
