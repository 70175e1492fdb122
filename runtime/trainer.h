// Trainer: one rank's share of training a plan. Builds the model chunks this rank holds
// (its pipeline stage's virtual stages, its tensor-parallel shard, its context-parallel
// chunks of every sequence), the data loader,
// the pipeline executor and the optimizer; train_step() runs one global batch:
//   pipeline forward/backward over the micro-batches (planner schedule; under ZeRO-3 each
//   component all-gathers its parameters before its forward and backward), with the
//   reduction over dp x cp (all-reduce, or reduce-scatter with ZeRO-1/2/3) of each
//   gradient bucket started as the last micro-batch's backward completes it
//   (ZeRO-2/3: each component's gradients reduce-scattered after its backward, every
//   micro-batch; ModelChunk + ParamResidency)
//   -> wait for the DP reduction
//   -> TP all-reduce of sequence-parallel partial gradients (sums commute with the DP
//      sum; under ZeRO-1 the TP peers own the same shard)
//   -> embedding-group all-reduce of the tied embedding (first + last stage); under
//      ZeRO-1 its DP reduce-scatter comes after it (the two stages shard it differently)
//   -> global gradient norm (one all-reduce over the world, also carrying the loss)
//   -> clipping + AdamW (+ all-gather of parameters with ZeRO-1/2; ZeRO-3 keeps its shard).
// Every rank returns the same StepStats.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "planner/plan.h"
#include "runtime/checkpoint.h"
#include "runtime/data_loader.h"
#include "runtime/distributed_optimizer.h"
#include "runtime/model_chunk.h"
#include "runtime/model_dims.h"
#include "runtime/parameter_store.h"
#include "runtime/pipeline_executor.h"
#include "runtime/process_grid.h"
#include "runtime/train_config.h"

namespace strata::runtime {

// Training produced a non-finite loss, gradient norm or parameter. Raised on every rank
// alike (the values are reduced over the world) before the optimizer applies the step and
// before any checkpoint of it is written: bad input (a learning rate or data that make the
// run diverge), exit 2.
class TrainingDiverged : public InputError {
 public:
  using InputError::InputError;
};

struct StepStats {
  std::int64_t step = 0;        // 1-based number of the step just completed
  double loss = 0;              // mean token loss over the global batch
  double grad_norm = 0;         // global L2 norm before clipping
  double lr = 0;                // learning rate the step applied
  double step_s = 0;            // wall time on this rank
  double tokens_per_s = 0;      // global batch tokens / step_s
  double gemm_s = 0;            // time in GEMMs on this rank
  double dp_wait_s = 0;         // waiting for the DP gradient reduction after the backward pass
};

// Bytes of this rank's parameter, gradient and optimizer buffers, as the parameter store
// and the optimizer count them (activations and communication staging copies are not
// counted). params/grads: kept for the whole run (everything, or the ZeRO shard);
// peak_gathered_*: the most full-size copies of sharded parameters (ZeRO-3) / gradients
// (ZeRO-2/3) resident at once; peak_total: the largest sum of all of them at one moment.
struct RankMemory {
  std::size_t params_bytes = 0, grads_bytes = 0, optimizer_bytes = 0;
  std::size_t peak_gathered_params_bytes = 0, peak_gathered_grads_bytes = 0;
  std::size_t peak_total_bytes = 0;
};

class Trainer {
 public:
  // InputError (on every rank alike) for a plan the runtime cannot run or bad data.
  Trainer(const planner::Plan& plan, const TrainConfig& cfg, ProcessGrid& grid);
  ~Trainer();

  StepStats train_step();
  std::int64_t step() const { return step_; }  // steps completed
  const std::string& run_id() const { return run_id_; }

  // Collective. Writes the checkpoint of the current step under cfg.checkpoint_dir;
  // TrainingDiverged on every rank (nothing written) when any parameter is not finite.
  void save_checkpoint();
  // Collective. Loads the latest complete checkpoint under cfg.checkpoint_dir; InputError
  // when there is none or it does not match. Returns its step.
  std::int64_t resume();

  // Per-parameter gradient L2 norms of the last step (full tensors, whole model), in a
  // fixed order; the same on every rank and for every layout.
  const std::vector<std::pair<std::string, double>>& param_grad_norms() const { return norms_; }
  std::int64_t tokens_per_step() const;
  // Data-parallel gradient buckets per step on this rank (0 without DP); with sharded
  // gradients (ZeRO-2/3) the reduce-scatters per micro-batch (one per component).
  std::size_t grad_buckets() const;
  RankMemory memory() const;

 private:
  void sync_model_parallel_grads();
  CheckpointIdentity identity() const;

  planner::Plan plan_;
  TrainConfig cfg_;
  ProcessGrid& grid_;
  ModelDims dims_;
  TpGroup tp_;
  CpGroup cp_;
  ParameterStore<float> store_;
  // Mixture of experts: this rank's routed experts, apart from store_ because their
  // gradients are summed (and ZeRO-1 shards split) over the expert data-parallel group,
  // not over dp. Empty for dense models and stages without MoE blocks.
  ParameterStore<float> experts_;
  EpGroup ep_;
  std::unique_ptr<DistributedOptimizer> expert_optimizer_;  // null when experts_ is empty
  std::map<std::string, int> expert_grad_uses_;
  std::vector<std::unique_ptr<ModelChunk<float>>> chunks_;
  std::unique_ptr<PipelineExecutor> executor_;
  std::unique_ptr<DistributedOptimizer> optimizer_;
  std::unique_ptr<DataLoader> data_;
  std::vector<planner::ScheduleStep> schedule_;
  bool holds_embedding_ = false, holds_head_ = false;
  std::vector<std::string> global_names_;   // every parameter of the model, fixed order
  std::map<std::string, int> grad_uses_;    // components of this rank that write each gradient
  std::vector<std::pair<std::string, double>> norms_;
  std::int64_t step_ = 0;
  std::string run_id_;
};

}  // namespace strata::runtime
