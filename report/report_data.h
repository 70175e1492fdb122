// ReportData: what `strata compare` shows, independent of the output format.
// Filled from the planner (search / simulate) and, optionally, from `strata validate`
// measurements; rendered by report_html.h, report_markdown.h and report_json.h.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/prediction.h"
#include "planner/simulator.h"
#include "planner/strategy.h"
#include "report/time_to_train.h"

namespace strata::report {

// One measured run of a strategy (from `strata validate --format json`).
struct MeasuredStep {
  std::string status;      // "ok" | "failed" | "timeout"
  double step_s = 0;       // median step time after warm-up (status ok)
  std::string error;       // first error line when not ok
  double host_load_1m = -1;  // the host's 1-minute load average right after the run (-1: unknown)
};

struct ReportEntry {
  planner::Strategy strategy;
  planner::Prediction prediction;
  std::vector<std::vector<int>> stage_layers;      // virtual stage -> layer groups
  std::vector<planner::TimelineEvent> timeline;    // empty: no Gantt for this entry
  std::optional<MeasuredStep> measured;
};

struct ReportData {
  std::string model;
  std::string cluster;
  std::string device;
  double device_memory_gib = 0;    // capacity per GPU
  double device_reserve_gib = 0;   // workspace reserve, counted in the planner's memory figures
  int gpus = 0;
  std::int64_t seq_len = 0;
  std::string origin;              // "planner top 5 of 1234 candidates", "strategies.yaml"
  std::string measured_origin;     // file the measurements came from, if any
  std::string measured_host;       // the machine validate measured on ("" unknown)
  int measured_host_cores = 0;     // its cores, to read the load against (0 unknown)
  std::vector<std::string> notes;  // provenance: datasheet vs measured numbers
  std::vector<ReportEntry> entries;
  TrainingTarget target;           // --train-tokens: time, GPU-hours and cost per strategy
  // The `strata compare` command line that writes this report, its arguments as shell words
  // (cli/command_line.h); "" when unknown (a report built by a program, not the command).
  std::string command_line;
};

// Where and under what load the measured step times were taken: "on HOST (N cores); host
// load 0.4 .. 3.1 (1-minute average after each run)", and a warning when the load exceeded
// the cores (the runs shared the machine: measured steps are slower than an idle host's).
// "" when the measurements carry none of it.
std::string measured_conditions(const ReportData& data);

// Index of the entry with the smallest predicted iteration time among those that fit
// memory (all entries if none fit); -1 when there are none.
int best_entry(const ReportData& data);

// 1234567 -> "1.23M", 12345 -> "12.3k", 12.3 -> "12.3".
std::string format_count(double v);
// GiB with one decimal: "12.3 GiB".
std::string format_gib(double gib);

// "tp2 pp4 dp8 · mbs 1 · vpp 2 · zero 1 · sel · sp · interleaved": short and unique
// for the fields that differ from the defaults; every parallel dimension above 1 is in its
// first part ("tp1 pp1 dp64 ep8 · mbs 1"), the precision last when the strategy sets one.
std::string strategy_label(const planner::Strategy& s);
// "tp2 pp4 dp8", then " cp2", " ep8", " etp2" for each of those above 1.
std::string parallel_dims_label(const planner::Strategy& s);
// Some entry uses expert parallelism (ep or etp > 1): the ep / etp columns are shown.
bool any_experts(const ReportData& data);
// Some entry uses context parallelism (cp > 1 or cp communication): the CP comm column.
bool any_context_parallel(const ReportData& data);

// 0.0123 -> "12.3 ms", 1.5 -> "1.50 s", 4.2e-5 -> "42.0 us".
std::string format_seconds(double s);
// The prediction's likely step-time range from its uncertainty band, "25.9 s – 30.6 s";
// "–" without a band (stack not validated on the device).
std::string format_likely_range(const planner::Prediction& p);
// Some entry's prediction has an uncertainty band (the likely-range column is shown).
bool any_band(const ReportData& data);
// 0.4567 -> "45.7%".
std::string format_percent(double fraction);

// Absolute error of a prediction vs a measurement in percent of the measurement.
double abs_error_pct(double predicted_s, double measured_s);

// Enum names as the plan files spell them ("1f1b", "selective"): planner::to_string.
const char* schedule_name(planner::ScheduleKind k);
const char* recompute_name(planner::Recompute r);
// The recompute of a strategy as the tables print it: "selective:mla_up_proj" (Megatron-Core
// modules, as Megatron names them), "full:2/chunk" (the first n blocks of each chunk), or the
// plain word (a stack's own meaning of selective, e.g. TorchTitan's per-op policy, included).
std::string recompute_label(const planner::Strategy& s);

}  // namespace strata::report
