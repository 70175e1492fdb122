// Strategy: one parallel layout of a training step. Plain data; validate() lists
// every violated constraint with the field, its value and the rule.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "costmodel/recompute_modules.h"
#include "models/model_spec.h"

namespace strata::planner {

enum class Recompute { None, Selective, Full };
enum class ScheduleKind { GPipe, OneFOneB, Interleaved };

struct Strategy {
  int dp = 1, tp = 1, pp = 1;
  int cp = 1;                        // context parallel: the sequence split over cp ranks
  int vpp = 1;                       // virtual stages (model chunks) per pipeline rank
  std::int64_t micro_batch = 1;
  std::int64_t global_batch = 1;
  int zero = 0;                      // ZeRO stage 0..3: 1 optimizer state (distributed
                                     // optimizer), 2 + gradients, 3 + parameters (FSDP)
  Recompute recompute = Recompute::None;
  // With recompute selective: the Megatron-Core submodules recomputed (--recompute-modules);
  // none set = the attention core (strata's selective mode). Not searched.
  costmodel::RecomputeModules recompute_modules{};
  // With recompute full: only the first n blocks of each model chunk re-run their forward in
  // the backward, the others keep their activations (Megatron-LM's --recompute-method block
  // --recompute-num-layers n); 0 = every block. Not searched.
  int recompute_layers = 0;
  bool sequence_parallel = false;
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  std::string rank_order = "tp-dp-pp";
  // Mixture of experts (Megatron-Core parallel folding): the tp x dp ranks of a pipeline
  // stage hold the experts as etp x ep x edp (etp innermost): ep splits the experts,
  // etp splits each expert's GEMMs, edp = tp * dp / (ep * etp) replicates them.
  int ep = 1, etp = 1;
  // Megatron-Core's batch-level EP overlap (--overlap-moe-expert-parallel-comm): in the 1F1B
  // steady state each forward runs merged with another micro-batch's backward, so one's MoE
  // token exchange hides behind the other's compute (planner/ep_overlap.h). Not searched.
  bool ep_overlap = false;
  // With ep_overlap: Megatron-Core's --delay-wgrad-compute, the weight gradients run apart
  // from the input gradients in the merged steps so that more of the exchange hides
  // (planner/ep_overlap.h merged_layers_s). Not searched.
  bool delay_wgrad = false;
  // bf16 | fp16 | fp8 in place of the software stack's precision; empty: the stack's. fp8
  // runs the linear layers as FP8 GEMMs (costmodel/fp8_linear.h). Not searched.
  std::string precision;

  int gpus() const { return dp * tp * pp * cp; }
  // Expert data parallel: Megatron-Core folds the experts over the same ranks as
  // attention's tp x cp x dp, as etp x ep x edp.
  int edp() const { return ep * etp > 0 ? tp * cp * dp / (ep * etp) : 0; }
  std::int64_t num_microbatches() const { return global_batch / (micro_batch * dp); }
  bool operator==(const Strategy&) const = default;
};

struct Violation {
  std::string field;   // "strategy.tp"
  std::string message; // "strategy.tp (3) must divide model.heads (32)"
};

// Who splits the layers into pp x vpp virtual stages: strata (every stage holds a block, so
// at most L stages) or a given split (a plan's stage_layers, a runs row's pipeline_split, an
// imported job), which may put the embedding and the loss on stages of their own as
// Megatron-LM's --account-for-embedding/loss-in-pipeline-split does: at most L + 2.
enum class StageSplit { Strata, Given };

// Structural constraints (divisibility, ranges, schedule/vpp consistency); memory
// is checked by the planner. Empty = valid.
std::vector<Violation> validate(const Strategy& s, const models::ModelSpec& m,
                                StageSplit split = StageSplit::Strata);
// Throws InputError listing every violation ("a; b; c") when validate() is not empty.
void require_valid(const Strategy& s, const models::ModelSpec& m, StageSplit split = StageSplit::Strata);

// True for the orders of tp, dp, pp (and optionally cp) written innermost first
// ("tp-dp-pp", "tp-cp-dp-pp"); an order without cp places it right after tp.
bool valid_rank_order(const std::string& order);
// Vocabulary padded as Megatron-LM does (--make-vocab-size-divisible-by 128): the next
// multiple of 128 * tp. tp need not divide model.vocab; the vocab-parallel embedding and
// the cost model use this size.
std::int64_t padded_vocab(std::int64_t vocab, int tp);
// Parameters per data-parallel gradient bucket (one collective each): Megatron-LM DDP's
// default, max(40M, 1M * dp). The simulator times the reduction with it; the runtime
// reduces with it unless told otherwise.
inline std::int64_t default_grad_bucket_params(int dp) {
  return std::max<std::int64_t>(40'000'000, std::int64_t{1'000'000} * dp);
}

const char* to_string(Recompute r);
const char* to_string(ScheduleKind k);
Recompute recompute_from_string(const std::string& s);     // InputError on unknown
ScheduleKind schedule_from_string(const std::string& s);   // InputError on unknown

}  // namespace strata::planner
