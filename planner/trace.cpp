// Chrome / Perfetto trace of a simulated iteration (JSON object format): one process per
// pipeline stage ("stage p"), one thread per stream, complete events ("ph": "X") with
// timestamps and durations in microseconds. Opens in ui.perfetto.dev or chrome://tracing.
#include <algorithm>
#include <array>
#include <iterator>
#include <string>

#include <fmt/format.h>

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

// The text is written directly, one event per line, instead of through a JSON tree: the
// tree held ~1.7 KB per event while it was built (1.5 GB at the 200 MB bound of
// planner/trace_bounds.h); the text alone is what is returned.
std::string chrome_trace_json(const SimulationResult& result, const std::string& title) {
  const auto quoted = [](const std::string& text) { return nlohmann::json(text).dump(); };
  std::string out;
  out.reserve(180 * (result.timeline.size() + 64));  // ~163 B an event at 900k events
  const auto append = [&out](fmt::string_view format, auto&&... args) {
    fmt::format_to(std::back_inserter(out), fmt::runtime(format), std::forward<decltype(args)>(args)...);
  };
  int stages = static_cast<int>(result.prediction.stage_memory_gib.size());
  for (const auto& e : result.timeline) stages = std::max(stages, e.stage + 1);
  out += "{\"traceEvents\": [\n";
  const char* sep = "";
  for (int p = 0; p < stages; ++p) {
    append("{}{{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": {}, \"tid\": 0, \"args\": {{\"name\": "
           "\"stage {}\"}}}}",
           sep, p, p);
    sep = ",\n";
    append("{}{{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": {}, \"tid\": 0, \"args\": "
           "{{\"sort_index\": {}}}}}",
           sep, p, p);
    for (std::size_t t = 0; t < kStreams.size(); ++t)
      append("{}{{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": {}, \"tid\": {}, \"args\": {{\"name\": "
             "\"{}\"}}}}",
             sep, p, t, kStreams[t]);
  }
  for (const auto& e : result.timeline) {
    append("{}{{\"name\": {}, \"cat\": {}, \"ph\": \"X\", \"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, "
           "\"args\": {{\"chunk\": {}",
           sep, quoted(e.name), quoted(e.stream), e.stage, stream_tid(e.stream), e.start_s * 1e6,
           (e.end_s - e.start_s) * 1e6, e.chunk);
    sep = ",\n";
    if (e.microbatch >= 0) append(", \"microbatch\": {}", e.microbatch);
    out += "}}";
  }
  const Prediction& p = result.prediction;
  append("\n], \"displayTimeUnit\": \"ms\", \"otherData\": {{\"title\": {}, \"iteration_s\": {}, "
         "\"bubble_fraction\": {}, \"peak_memory_gib\": {}}}}}\n",
         quoted(title), p.iteration_s, p.bubble_fraction, p.peak_memory_gib);
  return out;
}

}  // namespace strata::planner
