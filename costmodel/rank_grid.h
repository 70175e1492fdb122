// RankGrid: pure rank <-> (dp, tp, pp) arithmetic, no MPI. The cost model asks it
// where a group's ranks sit; the runtime builds its communicators from it, so the
// two can never disagree about placement. Order names axes innermost first:
// "tp-dp-pp" (Megatron default: tp fastest-varying, then dp, then pp).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace strata::costmodel {

enum class Axis { Tp, Dp, Pp };

struct RankCoords {
  int dp = 0, tp = 0, pp = 0;
  bool operator==(const RankCoords&) const = default;
};

class RankGrid {
 public:
  // Throws InputError for non-positive sizes or a bad order string.
  RankGrid(int dp, int tp, int pp, const std::string& order = "tp-dp-pp");

  int dp() const { return dp_; }
  int tp() const { return tp_; }
  int pp() const { return pp_; }
  int world_size() const { return dp_ * tp_ * pp_; }
  const std::string& order() const { return order_; }

  RankCoords coords(int rank) const;
  int rank(const RankCoords& c) const;
  // Ranks of the group along `axis` that contains `rank`, ordered by that axis' index.
  std::vector<int> group_ranks(Axis axis, int rank) const;
  // All groups along `axis` (each sorted by axis index), in a fixed order every rank agrees on.
  std::vector<std::vector<int>> all_groups(Axis axis) const;
  // Stride between consecutive ranks of a group along `axis` (1 for the innermost axis).
  int stride(Axis axis) const;

 private:
  int size(Axis a) const;
  int dp_, tp_, pp_;
  std::string order_;
  std::array<Axis, 3> axes_;  // innermost first
};

const char* to_string(Axis a);

}  // namespace strata::costmodel
