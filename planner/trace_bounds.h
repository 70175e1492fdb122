// How large a timeline (Chrome trace, compare's Gantt charts) of one strategy gets,
// estimated from the strategy alone, before the simulator records a single event: the
// commands that write timelines refuse a strategy whose output would pass kMaxTraceBytes
// instead of allocating gigabytes (pp 96 with a global batch of 10,000 once took 6 GB).
#pragma once
#include <algorithm>

#include "common/errors.h"

#include "planner/strategy.h"

namespace strata::planner {

// The largest timeline output a command writes: 200 MB (decimal).
inline constexpr double kMaxTraceBytes = 200e6;
// Bytes of one event in chrome_trace_json's output (one event per line): 157 B measured on
// GPT-3 175B (tp 8 pp 16 dp 8, 12,050 events), 163 B on the tiny model at 908,634 events
// (longer micro-batch numbers in the names); rounded up.
inline constexpr double kTraceJsonBytesPerEvent = 180;
// Peak memory of a traced simulate per event (the recorded events and the text): 292 B
// measured (tiny, 908,634 events: 266 MB peak RSS); rounded up. The JSON tree it replaced
// held 1.66 KB an event.
inline constexpr double kTraceMemoryBytesPerEvent = 320;
// Events of a stage that do not scale with micro-batches: DP gradient buckets, the
// optimizer step, the parameter all-gather, the tied embedding's reduction (at most 64).
inline constexpr double kTraceEventsPerStage = 64;

// An upper estimate of the simulator's timeline events for `s` (SimulateOptions::timeline):
// a forward and a backward per micro-batch and virtual stage on the compute stream, each
// with at most one event on the expert all-to-all lane (only when ep or etp > 1) and one on
// the context-parallel lane (only when cp > 1), an activation and a gradient send per
// micro-batch across each of the pp x vpp - 1 virtual stage boundaries, and the per-stage
// events. A double: global batches up to 2^40 cannot overflow it.
inline double trace_event_estimate(const Strategy& s) {
  const double m = static_cast<double>(std::max<std::int64_t>(1, s.num_microbatches()));
  const double virtual_stages = static_cast<double>(s.pp) * std::max(1, s.vpp);
  const double lanes = 1.0 + (s.ep > 1 || s.etp > 1 ? 1.0 : 0.0) + (s.cp > 1 ? 1.0 : 0.0);
  return 2 * virtual_stages * m * lanes + 2 * m * (virtual_stages - 1) + kTraceEventsPerStage * s.pp;
}

// Bytes chrome_trace_json writes for `s`, estimated from above.
inline double trace_bytes_estimate(const Strategy& s) {
  return trace_event_estimate(s) * kTraceJsonBytesPerEvent;
}

// Refuses (InputError naming `flag`, the estimated size and what to change) a strategy
// whose Chrome trace would pass kMaxTraceBytes, before the timeline is recorded.
inline void require_trace_within_bound(const Strategy& s, const char* flag) {
  const double events = trace_event_estimate(s);
  const double bytes = events * kTraceJsonBytesPerEvent;
  if (bytes <= kMaxTraceBytes) return;
  input_error("{}: the trace of this strategy would hold about {:.0f} events (~{:.0f} MB written, "
              "~{:.1f} GB of memory while it is built), over the {:.0f} MB bound; it grows with the "
              "micro-batches per step ({} = global batch {} / (micro-batch {} x dp {})) times the "
              "pipeline stages (pp {} x vpp {}): use a smaller --global-batch or a larger "
              "--micro-batch, or leave out {}",
              flag, events, bytes / 1e6, events * kTraceMemoryBytesPerEvent / 1e9, kMaxTraceBytes / 1e6,
              s.num_microbatches(), s.global_batch, s.micro_batch, s.dp, s.pp, s.vpp, flag);
}

}  // namespace strata::planner
