// Search: enumerate every valid strategy for a model on `gpus` devices of a cluster,
// simulate each, rank the ones that fit memory by iteration time.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "planner/plan.h"
#include "planner/prediction.h"
#include "planner/strategy.h"

namespace strata::planner {

struct SearchOptions {
  // Software stack of every candidate; nullptr: the device's default. Must outlive search().
  const costmodel::SoftwareStack* stack = nullptr;
  int gpus = 0;
  std::int64_t global_batch = 0;   // 0: model default (e.g. 512 sequences)
  int top_k = 10;
  // Optional restrictions (unset = search all).
  std::optional<int> tp, pp, dp, cp, vpp, zero;
  std::optional<int> ep, etp;  // MoE models: expert parallel / expert tensor parallel
  // Strategy::precision of every candidate (kept, not searched); empty: the stack's.
  std::string precision;
  std::optional<std::int64_t> micro_batch;
  std::optional<Recompute> recompute;
  // The Megatron-Core modules the selective candidates recompute (--recompute-modules); unset:
  // the stack's meaning of `selective` (SoftwareStack::selective_recompute).
  std::optional<costmodel::RecomputeModules> recompute_modules;
  std::optional<bool> sequence_parallel;
  std::optional<ScheduleKind> schedule;
  // Threads to simulate on; 0: the machine's cores (at most 8, fewer for small spaces).
  // The result does not depend on it.
  int threads = 0;
  // Leave out candidates that provably cannot reach the top_k (their lower bound on the
  // iteration time exceeds the k-th best simulated): same result, much less work. false:
  // simulate every valid candidate, over memory too (tests compare the two).
  bool prune = true;
  // Called now and then with (done, total) from the calling thread, for a progress bar.
  std::function<void(std::int64_t, std::int64_t)> progress;
};

struct Candidate {
  Strategy strategy;
  Prediction prediction;
  std::vector<std::vector<int>> stage_layers;
};

// The plan file of a candidate: the model, the cluster's name, the strategy, its stage split
// and prediction.
Plan to_plan(const models::ModelSpec& model, const std::string& cluster, const Candidate& c);

struct SearchResult {
  std::vector<Candidate> ranked;          // fits memory, best (fastest) first, top_k kept
  // Valid strategies, each scored for memory and bounded in time (most need no simulation).
  std::int64_t candidates_evaluated = 0;
  std::int64_t infeasible_memory = 0;     // of those, over device memory
  std::int64_t invalid = 0;               // rejected by constraints before simulation
  // Pipeline-walked simulations run, and fitting candidates left out because their lower
  // bound exceeded the k-th best (these two depend on the thread count; nothing else does).
  std::int64_t simulated = 0, pruned = 0;
  double search_s = 0;
  // When nothing fits: the smallest-memory candidate, so the error can say how far off it is.
  std::optional<Candidate> closest_infeasible;
};

// InputError for bad options (gpus <= 0, gpus > cluster, global batch not divisible...).
// Does not throw when nothing fits: the caller turns empty `ranked` into NoFeasiblePlan.
SearchResult search(const models::ModelSpec& model, const costmodel::ClusterSpec& cluster,
                    const SearchOptions& options);

}  // namespace strata::planner
