// MeasuredRun: one training job a user (or a publication) ran, with the step time it took:
// the rows `strata calibrate --from-runs` fits the training-loss parameters to and
// `strata validate --runs` checks a profile against. The runs file, so that any tool can
// write one:
//
//   source: "where the numbers come from"      # optional default for every row
//   include: [h100-moe.yaml]                   # optional: other runs files (paths relative to
//                                              # this one) whose rows come first, each with its
//                                              # own source and defaults
//   defaults: {cluster: dgx-h100, stack: nemo-2024-perf}   # optional keys every row inherits
//   runs:
//     - id: llama3-70b-64                      # optional (default runs[i])
//       model: llama3-70b                      # catalog name, path (YAML / HF config.json) or a map
//       cluster: dgx-h100                      # catalog name or path
//       stack: nemo-2024-perf                  # optional: the device's default stack
//       stack_settings: {overlap: {tp_comm: false}}  # optional: stack keys this job changed
//       strategy: {tp: 4, pp: 4, dp: 16, vpp: 5, micro_batch: 1, global_batch: 1024, zero: 1, ...}
//       precision: bf16                        # optional (fp8: FP8 linear layers)
//       measured: {iteration_s: 14.7}          # or tokens_per_s_per_gpu, or model_tflops_per_gpu;
//                                              # optional peak_memory_gib: the peak memory per GPU
//                                              # the job reported (checked, never fitted)
//       source: "where the number comes from"
//       sweep: "fig13-gbs128"                  # optional: rows ranked against each other
//       use: fit                               # fit (default) | check: predicted, never fitted
//       note: "what the row's settings rest on"  # optional, free text
//
// model_tflops_per_gpu counts FLOPs as strata does (Prediction::model_tflops_per_gpu, no
// recompute); a throughput with another convention should be converted to iteration_s.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "costmodel/training_losses.h"
#include "models/model_spec.h"
#include "planner/prediction.h"
#include "planner/simulator.h"
#include "planner/strategy.h"

namespace strata::calibration {

struct MeasuredRun {
  std::string id;
  std::string source;        // the held-out unit of cross-validation
  std::string sweep;         // empty: not part of a ranked sweep
  bool fit = true;           // use: fit | check
  std::string model_name, cluster_name, stack_name;
  models::ModelSpec model;
  costmodel::ClusterSpec cluster;
  costmodel::SoftwareStack stack;
  planner::Strategy strategy;
  std::vector<std::vector<int>> stage_layers;  // Megatron-LM's split where the row gives one; empty: strata's
  double measured_s = 0;     // seconds per iteration
  // Peak memory per GPU the job reported (GiB; measured.peak_memory_gib), 0 = not given:
  // validate --runs prints it beside the prediction; nothing is fitted to it.
  double measured_memory_gib = 0;
  // The run's model graphs, built by its first simulation and reused by the rest (the fit
  // simulates a run dozens of times, each with other losses); copies of a run share them.
  std::shared_ptr<planner::SimulationGraphs> graphs = planner::make_simulation_graphs();
};

// Reads and checks a runs file: every row's model, cluster, stack and strategy load and
// simulate (InputError naming the row otherwise); measured throughputs become seconds per
// iteration. Errors: no rows, a non-positive measurement, two rows of the same job whose
// measurements disagree by more than 25% (contradictory rows).
std::vector<MeasuredRun> load_measured_runs(const std::string& path);
std::vector<MeasuredRun> parse_measured_runs(const std::string& yaml_text, const std::string& source);

// Runs from training logs and the Megatron-LM arguments of the jobs that wrote them, in
// pairs (`strata calibrate --from-log L --job A`), on one cluster and stack (empty: the
// device's default); InputError when the lists differ in length or the cluster is missing.
std::vector<MeasuredRun> runs_from_logs(const std::vector<std::string>& logs, const std::vector<std::string>& jobs,
                                        const std::string& cluster, const std::string& stack,
                                        const std::string& source);

// The run's prediction with `losses` in place of its device's; predict_run_s: its seconds
// per iteration.
planner::Prediction predict_run(const MeasuredRun& run, const costmodel::TrainingLosses& losses);
double predict_run_s(const MeasuredRun& run, const costmodel::TrainingLosses& losses);

// What a run's job is, for messages and duplicate detection: model, cluster, stack, strategy.
std::string run_signature(const MeasuredRun& run);

}  // namespace strata::calibration
