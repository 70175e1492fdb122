// Simulator: a discrete-event simulation of one training iteration of a strategy.
// Per pipeline stage it keeps a compute stream and a communication stream, walks the
// step lists of planner/schedule.h, charges op times from the cost model, p2p sends
// between stages, DP gradient reduction overlapped with backward in buckets, and the
// optimizer step. It returns the prediction and the timeline (for traces and charts).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "planner/prediction.h"
#include "planner/strategy.h"

namespace strata::planner {

struct TimelineEvent {
  int stage = 0;          // pipeline rank
  // "compute" | "pp_comm" | "dp_comm" | "optimizer" | "ep_comm" (the expert all-to-all
  // inside a compute step) | "cp_comm" (the context-parallel K/V exchange inside one)
  std::string stream;
  std::string name;       // "F m3 c0", "B m3 c0", "send act m3", "allreduce bucket 2", ...
  int microbatch = -1;
  int chunk = 0;
  double start_s = 0, end_s = 0;
};

// One op of one micro-batch on one rank, as the cost model charged it (`strata simulate
// --ops`): its compute, without the TP collectives around it.
struct OpCostRow {
  int group = 0;          // layer group: 1 = the first transformer block, L+1 = head and loss
  std::string name;       // "layer1.qkv"
  std::string kind;       // models::to_string(OpKind)
  double fwd_s = 0, bwd_s = 0;
  double flops = 0;       // forward + backward FLOPs this rank runs (GEMMs, attention; causal for flash)
  double bytes_fwd = 0;   // forward bytes of a memory-bound op on this rank (0 for GEMMs)
  std::string source;     // measured | interpolated | roofline
};

struct SimulationResult {
  Prediction prediction;
  std::vector<OpCostRow> ops;                  // empty unless SimulateOptions::op_costs
  std::vector<std::vector<int>> stage_layers;  // virtual stage -> layer groups, as in Plan
  std::vector<TimelineEvent> timeline;         // empty unless SimulateOptions::timeline
};

// The model graphs a simulation builds (one per micro-batch size and context split), kept
// across simulate() calls of one model on one device that change only what ops cost: the
// training-loss fit (calibration/fit_runs.h) simulates each measured run dozens of times
// with other loss parameters, and building the graphs was about half of every call.
class SimulationGraphs;
std::shared_ptr<SimulationGraphs> make_simulation_graphs();

struct SimulateOptions {
  bool timeline = false;                           // record events (costs time; off in search)
  bool op_costs = false;                           // fill SimulationResult::ops (first block, head)
  // The software stack the job runs under; nullptr: costmodel::default_software_stack_name
  // of the cluster's device. Must outlive the call.
  const costmodel::SoftwareStack* stack = nullptr;
  std::vector<std::vector<int>> stage_layers;      // empty: partition by StagePartition
  // Graphs to reuse and fill (make_simulation_graphs), only ever for this model and device;
  // nullptr: built for this call.
  std::shared_ptr<SimulationGraphs> graphs;
};

// Throws InputError listing violations if the strategy is invalid for the model or does
// not match the cluster (gpus > cluster size). Memory overflow is *not* an error here:
// prediction.fits_memory says it.
SimulationResult simulate(const models::ModelSpec& model, const costmodel::ClusterSpec& cluster,
                          const Strategy& strategy, const SimulateOptions& options = {});

// Chrome / Perfetto trace (JSON object format, "traceEvents"): one process per stage,
// one thread per stream.
std::string chrome_trace_json(const SimulationResult& result, const std::string& title);

}  // namespace strata::planner
