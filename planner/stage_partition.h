// StagePartition: splits the layer groups of a model (0 = embedding, 1..L blocks,
// L+1 = final norm + LM head + loss) into `stages` contiguous virtual pipeline stages
// so that the most expensive stage is as cheap as possible (uneven stages allowed:
// the embedding and the LM head cost real time).
//
// Rules: every virtual stage holds at least one transformer block (so the embedding
// rides with the first block and the head with the last one); the split minimizes the
// maximum stage cost (exact, dynamic programming); among the splits that reach that
// optimum it picks, stage by stage from the front, the one closest to an even share of
// what is left (ties: the lighter stage first). Deterministic: same costs, same split.
// Optionally a per-stage memory cap: a stage whose memory (sum of group memory) would
// exceed it is not allowed; if no split satisfies the cap, the unconstrained one is
// returned and `fits_memory()` is false.
#pragma once
#include <vector>

namespace strata::planner {

class StagePartition {
 public:
  // group_costs.size() = L + 2 (L >= 1), costs >= 0; 1 <= stages <= L.
  // Throws InputError otherwise.
  static StagePartition balance(const std::vector<double>& group_costs, int stages);
  // As above with a memory cap per stage (group_memory.size() == group_costs.size()).
  static StagePartition balance(const std::vector<double>& group_costs, int stages,
                                const std::vector<double>& group_memory, double memory_cap);

  // Of Megatron-LM's uneven splits (planner/first_last_stages.h: first / last pipeline rank
  // given, the middle ranks even, every rank's chunks alike) over pp x vpp virtual stages,
  // the one whose most expensive virtual stage is cheapest (ties: the fewest blocks per
  // middle rank, then on the first rank). pp >= 2; empty stages() when no first / last counts fit (e.g. blocks not a
  // multiple of vpp). The embedding costs with the first rank, the head with the last.
  static StagePartition first_last(const std::vector<double>& group_costs, int pp, int vpp);

  // stages()[v] = the layer groups of virtual stage v, ascending (v = chunk * pp + rank).
  const std::vector<std::vector<int>>& stages() const { return stages_; }
  const std::vector<double>& stage_costs() const { return stage_costs_; }
  double max_cost() const { return max_cost_; }
  bool fits_memory() const { return fits_memory_; }

  // Max stage cost of an explicit split (for comparing against other splits in tests).
  static double max_stage_cost(const std::vector<double>& group_costs,
                               const std::vector<std::vector<int>>& stages);

 private:
  std::vector<std::vector<int>> stages_;
  std::vector<double> stage_costs_;
  double max_cost_ = 0;
  bool fits_memory_ = true;
};

}  // namespace strata::planner
