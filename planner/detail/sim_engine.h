// SimEngine (private to strata_planner): the iteration simulator with the caches the
// search needs to stay fast. simulate() builds one engine per call; search() keeps one
// engine for the whole space so that everything that does not depend on the whole
// strategy is computed once:
//   - ModelGraph per micro-batch (the Boost graph is built once per micro_batch),
//   - per-layer-group costs per (micro_batch, tp, sequence_parallel, TP placement, cp and
//     the CP group's placement),
//   - placements (TP / CP / DP groups, pipeline neighbours) per (tp, pp, dp, cp, order),
//   - stage partitions per (costs, pp, vpp, recompute),
//   - the pipeline walk per (stage times, schedule), reused across ZeRO stages.
// Its members live in four files: the event engine (simulator.cpp) and the cost charging
// (layer_costs.cpp: per op; step_costs.cpp: per step and iteration; simulator_notes.cpp).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "costmodel/cluster_spec.h"
#include "costmodel/collective_cost.h"
#include "costmodel/block_table.h"
#include "costmodel/memory_model.h"
#include "costmodel/op_cost.h"
#include "costmodel/prediction_band.h"
#include "costmodel/zero_sharding.h"
#include "models/model_graph.h"
#include "models/model_spec.h"
#include "planner/detail/pipeline_walk.h"
#include "planner/schedule.h"
#include "planner/simulator.h"
#include "planner/strategy.h"

namespace strata::planner {

// A SimEngine's graphs (planner/simulator.h): by (micro-batch size, cp).
class SimulationGraphs {
 public:
  struct Graph {
    std::unique_ptr<models::ModelGraph> graph;
    std::unique_ptr<costmodel::MemoryModel> memory;
    std::vector<std::size_t> first_alike;  // first_alike_blocks(*graph)
  };
  std::map<std::pair<std::int64_t, int>, Graph> by_shape;
};

}  // namespace strata::planner

namespace strata::planner::detail {

// Costs of one layer group for one micro-batch on one rank (given tp and SP).
struct GroupCost {
  double fwd_s = 0, bwd_s = 0;        // compute (GEMM, attention, elementwise)
  double tp_fwd_s = 0, tp_bwd_s = 0;  // TP collectives left exposed by the stack's overlaps
  double ep_fwd_s = 0, ep_bwd_s = 0;  // MoE token dispatch / combine (not overlapped)
  double attn_fwd_s = 0;              // attention core forward (selective recompute)
  // Forward time and FLOPs of the parts selective recompute by module re-runs in the
  // backward (costmodel::RecomputeModules; core_attn is attn_fwd_s): block norms, MLA up
  // projections with their latent norms and RoPE, the dense MLP, the MoE MLP (router,
  // experts, shared experts, permutes; its token exchange in moe_ep_fwd_s), the routed
  // experts' activation, the shared experts.
  struct ModuleCost {
    double fwd_s = 0, flops_fwd = 0;
  };
  ModuleCost norm, mla_up, dense_mlp, moe, moe_act, shared_experts;
  double shared_experts_bwd_s = 0;  // their backward, for the shared-expert overlap
  ModuleCost per_op;  // what TorchTitan's per-op policy re-runs (recompute_modules.h)
  double moe_ep_fwd_s = 0;
  // For the merged steps of the EP overlap (planner/ep_overlap.h), the parts Megatron-Core's
  // layer schedule runs apart: the routed experts' compute (Megatron's `mlp` node: experts,
  // their activation, the combine's permute), the weight-gradient halves of the GEMMs' backward
  // (routed experts; the rest of the block), and the dispatch all-to-all of each direction (the
  // combine's is ep_*_s less these).
  double experts_fwd_s = 0, experts_bwd_s = 0;
  double experts_wgrad_s = 0, block_wgrad_s = 0;
  double ep_dispatch_fwd_s = 0, ep_dispatch_bwd_s = 0;
  double cp_fwd_s = 0, cp_bwd_s = 0;  // context-parallel K/V exchange left exposed
  double flops_fwd = 0, flops_bwd = 0;  // model FLOPs, whole group, unsharded
  double attn_flops_fwd = 0;
  double params_rank = 0;             // parameters held by one TP rank
                                      // (with cp > 1: per rank's s/cp tokens for times, and
                                      // FLOPs scaled back to the whole sequence)
  double expert_params_rank = 0;      // of which routed experts (reduced over edp, not dp)
  double fp8_weights_rank = 0;        // of those, weights of FP8-run layers (FP8 recipe)
  // Under a module-by-module ZeRO-3 gather (stack zero3_gather: module): the parameters on
  // one TP rank of each module a pass gathers, dense and routed-expert (one per local
  // expert), without the modules the stack persists.
  std::vector<double> zero3_dense_units, zero3_expert_units;
};

struct GroupCostTable {
  std::vector<GroupCost> groups;      // L + 2
  bool gemm_measured = false;         // any GEMM time from a measured table
  bool gemm_roofline = false;         // any GEMM time from the roofline
  bool tp_measured = false;           // TP collective time from a measured table
  bool blocks_measured = false;       // transformer blocks from the measured block_table
  bool tp_blocks_measured = false;    // ... and their TP communication too
  std::vector<OpCostRow> ops;         // first block and head group, when SimEngine::record_ops
};

struct Placement {
  costmodel::PlacedGroup tp, cp;
  costmodel::PlacedGroup dp;                 // gradient group: dp x cp ranks (Megatron-Core)
  costmodel::PlacedGroup ep, etp, edp;  // expert groups (Megatron-Core folding); size 1 if unused
  costmodel::PlacedGroup tp_ep;         // etp x ep ranks: the allgather dispatcher's group
  std::vector<costmodel::PlacedGroup> link;  // pipeline rank p -> (p + 1) % pp
  costmodel::PlacedGroup first_last;         // tied-embedding sync pair (stage 0, pp - 1)
};

// What the search learns about a candidate before its pipeline walk (SimEngine::screen).
struct Screening {
  double peak_memory_gib = 0;  // exactly run()'s prediction.peak_memory_gib
  bool fits_memory = false;    // exactly run()'s prediction.fits_memory
  // A proven lower bound on run()'s iteration_s (see screen()); 0 when none is proven.
  double lower_bound_s = 0;
  // The bound's arithmetic for every candidate, proven or not: an order to visit them in.
  double estimate_s = 0;
};

// How a strategy's gradients are reduced after the backward (ZeRO-0/1; step_costs.cpp).
struct GradReduce {
  bool active = false;  // dp x cp > 1
  costmodel::Collective collective = costmodel::Collective::AllReduce;  // or reduce-scatter (ZeRO-1)
  double grad_bytes = 0;     // per gradient element (the stack's grad_reduce_dtype)
  bool overlap = false;      // buckets launched during the backward
  double bucket_params = 0;  // parameters per bucket (infinity: one reduction of everything)
  double sm_share = 0;       // compute slowed per second of overlapped DP collective
};

// Per layer group of g: the first transformer block that is the same but for its op names
// and layer number (then every op of theirs costs the same: most blocks of a model are
// alike), else the group itself (layer_costs.cpp).
std::vector<std::size_t> first_alike_blocks(const models::ModelGraph& g);

// Largest pipeline the simulator times: compute steps per iteration (2 * pp * m * vpp).
inline constexpr double kMaxComputeSteps = 2e7;
// Empty when the strategy is small enough to simulate, else why not (names the fields).
std::string too_large_to_simulate(const Strategy& s);

class SimEngine {
 public:
  // stack nullptr: the device's default stack (costmodel::default_software_stack_name).
  // precision: bf16 | fp16 | fp8 in place of the stack's; empty: the stack's.
  SimEngine(const models::ModelSpec& model, const costmodel::ClusterSpec& cluster,
            const costmodel::SoftwareStack* stack = nullptr, const std::string& precision = "");

  // Simulates a strategy that already passed validate(). stage_layers empty: partition.
  SimulationResult run(const Strategy& s, bool timeline,
                       const std::vector<std::vector<int>>& stage_layers = {});
  // Memory and a lower bound on the iteration time without the pipeline walk (the walk is
  // most of run()'s time): the search walks only candidates that fit and can still rank.
  Screening screen(const Strategy& s);
  // Keep per-op costs of the first block and the head group (SimulationResult::ops); set
  // before the first run().
  void record_ops(bool on) { record_ops_ = on; }
  // Reuse and fill `graphs` (built for this engine's model and device) instead of its own.
  void share_graphs(std::shared_ptr<SimulationGraphs> graphs) {
    if (graphs) graphs_ = std::move(graphs);
  }
  // Notes on where the numbers came from, for a strategy (cheap to skip in search).
  std::vector<std::string> notes(const Strategy& s);

  costmodel::DType dtype() const { return dtype_; }
  const models::ModelSpec& model() const { return model_; }
  const costmodel::ClusterSpec& cluster() const { return cluster_; }
  const costmodel::SoftwareStack& stack() const { return stack_; }
  bool fp8() const { return fp8_; }  // linear layers under an FP8 recipe

 private:
  // Drop and pad (a capacity factor: every expert's input padded to its capacity) fixes the
  // dispatcher's sizes, so it returns before any host sync (megatron/core/transformer/moe/
  // token_dispatcher.py at d98e8a64): a stack's moe_host_sync then costs nothing.
  bool moe_pads_to_capacity() const { return model_.moe && model_.moe->capacity_factor > 0; }
  using Graph = SimulationGraphs::Graph;
  // ---- Event engine (simulator.cpp): placement, partition, the walk and its steps. ----
  // The graph of one micro-batch; cp > 1: the graph of one rank's s/cp tokens.
  const Graph& graph_for(std::int64_t micro_batch, int cp = 1);
  const Placement& placement_for(const Strategy& s);
  const std::vector<std::vector<int>>& partition_for(const Strategy& s, const GroupCostTable& t);
  void require_cp_supported(const Strategy& s) const;
  // Uncertainty band of the stack on this device for the strategy's GPU count (cached).
  const costmodel::PredictionBand& band_for(const Strategy& s);
  // run()'s steps after the pipeline walk.
  struct GradBucket {
    double ready, params;
    int stage, chunk;
    double expert_params = 0;  // routed-expert part, reduced over the edp group
  };
  struct GradientSync {
    std::vector<double> ready;  // per pipeline rank: gradients reduced (and embedding synced)
    int last = 0;               // the rank that is ready last (it gates the optimizer)
  };
  struct OptimizerPhase {
    double iteration_s = 0;                      // end of the last rank's step
    double optimizer_s = 0, param_gather_s = 0;  // of that rank
  };
  void grad_buckets(const Strategy& s, int p, const GradReduce& gr, const GroupCostTable& t,
                    const std::vector<std::vector<int>>& sl, const costmodel::StageMemory& mem,
                    std::vector<GradBucket>& buckets) const;
  GradientSync reduce_gradients(const Strategy& s, const Placement& pl, const GroupCostTable& t,
                                const std::vector<std::vector<int>>& sl,
                                const std::vector<costmodel::StageMemory>& mem,
                                std::vector<TimelineEvent>* events);
  OptimizerPhase optimizer_phase(const Strategy& s, const Placement& pl, const GroupCostTable& t,
                                 const std::vector<std::vector<int>>& sl,
                                 const std::vector<costmodel::StageMemory>& mem, double sync,
                                 std::vector<TimelineEvent>* events) const;
  void fill_throughput(const Strategy& s, double iteration, Prediction& pr);
  void fill_memory(const Strategy& s, const std::vector<costmodel::StageMemory>& mem, Prediction& pr) const;
  void fill_breakdown(const Strategy& s, const GradientSync& sync, const OptimizerPhase& opt,
                      Prediction& pr) const;
  void record_pipeline_events(const Strategy& s, std::vector<TimelineEvent>& events) const;

  // ---- Cost charging per op (layer_costs.cpp). ----
  const GroupCostTable& costs_for(const Strategy& s, const Placement& pl);
  struct LayerCostInputs;  // what every op of a strategy is charged with
  struct OpTiming;         // one op's compute and its GEMM parts
  OpTiming op_timing(const LayerCostInputs& in, const models::Op& op) const;
  costmodel::OpTime expert_time(const LayerCostInputs& in, const models::Op& op, bool fp8) const;
  void charge_op(const LayerCostInputs& in, std::size_t group, std::size_t op, GroupCostTable& t) const;
  void charge_recompute_modules(const models::Op& op, const costmodel::OpTime& ot, const LayerCostInputs& in,
                                GroupCost& c) const;
  void charge_tp_comm(const LayerCostInputs& in, const models::Op& op, const OpTiming& x, GroupCost& c,
                      GroupCostTable& t) const;
  // Accumulating one op's weight gradient into the main gradient, per micro-batch.
  double grad_accumulation_s(const models::Op& op, double op_params_rank) const;
  void apply_measured_block(const LayerCostInputs& in, std::size_t group, const std::string& signature,
                            GroupCostTable& t) const;

  // ---- Cost charging per step and iteration (step_costs.cpp). ----
  // Per virtual stage: forward / backward times and their parts, pipeline links (times_).
  struct StageTimes {
    std::vector<double> fwd, bwd, fwd_tp, bwd_tp, fwd_cp, bwd_cp, fwd_zero, bwd_zero;
    // The exposed expert all-to-all by direction (the forward's exchange; the backward's with
    // its recompute): the breakdown's ep_comm and the timeline's all-to-all lane.
    std::vector<double> ep_fwd, ep_bwd;
    // The GPU waiting for a host-synced MoE layer's CPU issue (moe_host_ms), by direction (the
    // backward's: its full-recompute re-run): the breakdown's host part.
    std::vector<double> host_fwd, host_bwd;
    std::vector<double> link, p2p_fwd, p2p_bwd;
    double model_flops_mb = 0, recompute_flops = 0;  // per micro-batch, whole model
    // What the GPUs execute per micro-batch: the model FLOPs and the recompute, with a flash
    // kernel's attention at its causal share (MFU's count takes the whole s x s matrix).
    double executed_flops_mb = 0;
  };
  void stage_times(const Strategy& s, const Placement& pl, const GroupCostTable& t,
                   const std::vector<std::vector<int>>& sl);
  // `reruns`: per group, whether it re-runs its forward in the backward (rerun_blocks).
  void stage_compute_parts(const Strategy& s, const GroupCostTable& t, const std::vector<std::vector<int>>& sl,
                           const std::vector<char>& reruns);
  void hide_ep_exchange(const Strategy& s, const Placement& pl, const GroupCostTable& t,
                        const std::vector<std::vector<int>>& sl);
  void add_zero_comm(const Strategy& s, const Placement& pl, const GroupCostTable& t,
                     const std::vector<std::vector<int>>& sl, const std::vector<char>& reruns);
  void count_model_flops(const Strategy& s, const GroupCostTable& t, const std::vector<char>& reruns);
  void pipeline_links(const Strategy& s, const Placement& pl);
  // Memory per pipeline rank; every_step: as after an unextended walk (timelines).
  std::vector<costmodel::StageMemory> memory(const Strategy& s, const Graph& gr,
                                             const std::vector<std::vector<int>>& sl, bool every_step);
  GradReduce grad_reduce(const Strategy& s, const Placement& pl) const;
  // One bucket's reduction: its dense parameters over dp x cp, its routed experts over edp.
  double dense_grads_reduce_s(const GradReduce& r, const Placement& pl, double params) const;
  double expert_grads_reduce_s(const GradReduce& r, const Placement& pl, double params) const;
  // Tied embeddings with pp > 1: the first and last stage all-reduce the embedding gradient.
  double embedding_grad_sync_s(const Strategy& s, const Placement& pl) const;
  // Adam step of one pipeline rank (+ the FP8 weight casts), without the ZeRO gather.
  double optimizer_s(const Strategy& s, const costmodel::StageMemory& mem, double fp8_weights_rank) const;
  // Once per iteration: the stack's passes over the gradient buffer (zero fill, NaN-check
  // norm, 1/dp scaling; SoftwareStack::grad_buffer_*), on the compute stream.
  double grad_buffer_passes_s(const Strategy& s, const costmodel::StageMemory& mem) const;
  // ZeRO-1/2 parameter all-gather after the step, as far as the next forward does not hide it.
  double param_gather_s(const Strategy& s, const Placement& pl, const costmodel::StageMemory& mem) const;
  std::vector<double> fp8_weights_per_rank(const Strategy& s, const GroupCostTable& t,
                                           const std::vector<std::vector<int>>& sl) const;

  bool record_ops_ = false;
  models::ModelSpec model_;
  costmodel::ClusterSpec cluster_;
  costmodel::SoftwareStack stack_;
  costmodel::OpCost op_cost_;
  costmodel::MeasuredBlockTable blocks_;
  costmodel::CollectiveCost coll_;
  costmodel::DType dtype_;  // every op but the FP8-run linear layers
  bool fp8_ = false;        // FP8 recipe: linear layers in FP8 (costmodel/fp8_linear.h)
  double act_bytes_ = 2;  // bytes per activation element (dtype)
  double mem_bytes_per_s_ = 0;    // achieved device memory bandwidth
  double kernel_overhead_s_ = 0;  // per non-GEMM kernel (stack or device)

  std::shared_ptr<SimulationGraphs> graphs_ = std::make_shared<SimulationGraphs>();
  // Keys: (tp, pp, dp, cp, order, ep, etp); costs add (ep, etp and the placement of their
  // groups) for MoE models only, so dense models keep sharing one table across dp.
  std::map<std::tuple<int, int, int, int, std::string, int, int>, Placement> placements_;
  std::map<std::tuple<std::int64_t, int, bool, int, int, int, int, int, int, int, costmodel::PlacedGroup,
                      costmodel::PlacedGroup>,
           GroupCostTable>
      costs_;
  std::map<std::tuple<const GroupCostTable*, int, int, int>, std::vector<std::vector<int>>>
      partitions_;  // (costs, pp, vpp, recompute)
  // ZeRO-2/3 exposed communication per layer group: (costs, placement, zero, full recompute).
  std::map<std::tuple<const GroupCostTable*, const Placement*, int, bool>,
           std::vector<costmodel::ZeroGroupComm>>
      zero_comm_;

  // Reused buffers and the last pipeline walk (see simulator.cpp).
  std::unique_ptr<PipelineWalk> walk_;
  std::map<long long, costmodel::PredictionBand> bands_;  // by GPU count
  costmodel::MemoryInputs mem_in_;
  StageTimes times_;
};

}  // namespace strata::planner::detail
