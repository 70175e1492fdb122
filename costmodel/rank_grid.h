// RankGrid: pure rank <-> (dp, tp, pp, cp) arithmetic, no MPI. The cost model asks it
// where a group's ranks sit; the runtime builds its communicators from it, so the
// two can never disagree about placement. Order names axes innermost first:
// "tp-dp-pp" (Megatron default: tp fastest-varying, then dp, then pp). The context-
// parallel axis may be named ("tp-cp-dp-pp", Megatron-Core's order); when it is not,
// it sits right after tp, as in Megatron-Core (parallel_state's "tp-cp-ep-dp-pp").
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace strata::costmodel {

enum class Axis { Tp, Dp, Pp, Cp };

struct RankCoords {
  int dp = 0, tp = 0, pp = 0, cp = 0;
  bool operator==(const RankCoords&) const = default;
};

class RankGrid {
 public:
  // Throws InputError for non-positive sizes or a bad order string.
  RankGrid(int dp, int tp, int pp, const std::string& order = "tp-dp-pp", int cp = 1);

  int dp() const { return dp_; }
  int tp() const { return tp_; }
  int pp() const { return pp_; }
  int cp() const { return cp_; }
  int size(Axis a) const;
  int world_size() const { return dp_ * tp_ * pp_ * cp_; }
  const std::string& order() const { return order_; }

  RankCoords coords(int rank) const;
  int rank(const RankCoords& c) const;
  // Ranks of the group along `axis` that contains `rank`, ordered by that axis' index.
  std::vector<int> group_ranks(Axis axis, int rank) const;
  // All groups along `axis` (each sorted by axis index), in a fixed order every rank agrees on.
  std::vector<std::vector<int>> all_groups(Axis axis) const;
  // Stride between consecutive ranks of a group along `axis` (1 for the innermost axis).
  int stride(Axis axis) const;
  // Ranks of one pipeline stage: tp x cp x dp.
  int stage_size() const { return tp_ * cp_ * dp_; }
  // True when each pipeline stage holds a contiguous block of stage_size() ranks (pp is the
  // outermost axis that is not of size 1): what Megatron-Core's expert folding needs.
  bool pipeline_outermost() const { return pp_ == 1 || stride(Axis::Pp) == stage_size(); }

 private:
  int dp_, tp_, pp_, cp_;
  std::string order_;
  std::array<Axis, 4> axes_;  // innermost first, cp placed even when the order omits it
  std::array<int, 4> strides_{};  // stride(axis), indexed by Axis (rank() runs in hot loops)
};

const char* to_string(Axis a);
// True for an order naming tp, dp and pp once each, and optionally cp once ("tp-cp-dp-pp").
bool valid_rank_order(const std::string& order);

}  // namespace strata::costmodel
