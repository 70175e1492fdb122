#include "costmodel/rank_grid.h"

#include <algorithm>
#include <climits>
#include <vector>

#include "common/checked_math.h"
#include "common/errors.h"
#include "common/rank_order.h"

namespace strata::costmodel {

const char* to_string(Axis a) {
  switch (a) {
    case Axis::Tp: return "tp";
    case Axis::Dp: return "dp";
    case Axis::Pp: return "pp";
    case Axis::Cp: return "cp";
  }
  return "?";
}

namespace {

bool parse_axis(const std::string& s, Axis& out) {
  if (s == "tp") out = Axis::Tp;
  else if (s == "dp") out = Axis::Dp;
  else if (s == "pp") out = Axis::Pp;
  else if (s == "cp") out = Axis::Cp;
  else return false;
  return true;
}

bool parse_order(const std::string& order, std::array<Axis, 4>& axes) {
  const auto names = parse_rank_order(order);
  if (!names) return false;
  for (std::size_t i = 0; i < axes.size(); ++i) parse_axis((*names)[i], axes[i]);
  return true;
}

}  // namespace

bool valid_rank_order(const std::string& order) {
  std::array<Axis, 4> axes{};
  return parse_order(order, axes);
}

RankGrid::RankGrid(int dp, int tp, int pp, const std::string& order, int cp)
    : dp_(dp), tp_(tp), pp_(pp), cp_(cp), order_(order) {
  if (dp < 1) input_error("rank grid dp ({}) must be >= 1", dp);
  if (tp < 1) input_error("rank grid tp ({}) must be >= 1", tp);
  if (pp < 1) input_error("rank grid pp ({}) must be >= 1", pp);
  if (cp < 1) input_error("rank grid cp ({}) must be >= 1", cp);
  std::int64_t world = checked_mul(checked_mul(checked_mul(dp, tp, "dp*tp"), pp, "dp*tp*pp"), cp,
                                   "dp*tp*pp*cp");
  if (world > INT_MAX) input_error("rank grid dp*tp*pp*cp ({}) exceeds {} ranks", world, INT_MAX);
  if (!parse_order(order, axes_))
    input_error("rank order '{}' is invalid: expected a permutation of tp, dp, pp (and optionally "
                "cp) joined by '-' (e.g. tp-dp-pp or tp-cp-dp-pp)",
                order);
  int stride = 1;
  for (Axis a : axes_) {
    strides_[static_cast<std::size_t>(a)] = stride;
    stride *= size(a);
  }
}

int RankGrid::size(Axis a) const {
  switch (a) {
    case Axis::Tp: return tp_;
    case Axis::Dp: return dp_;
    case Axis::Pp: return pp_;
    case Axis::Cp: return cp_;
  }
  return 1;
}

int RankGrid::stride(Axis axis) const { return strides_[static_cast<std::size_t>(axis)]; }

RankCoords RankGrid::coords(int rank) const {
  if (rank < 0 || rank >= world_size())
    input_error("rank {} is outside the grid of {} ranks", rank, world_size());
  RankCoords c;
  int r = rank;
  for (Axis a : axes_) {
    int idx = r % size(a);
    r /= size(a);
    if (a == Axis::Tp) c.tp = idx;
    else if (a == Axis::Dp) c.dp = idx;
    else if (a == Axis::Pp) c.pp = idx;
    else c.cp = idx;
  }
  return c;
}

int RankGrid::rank(const RankCoords& c) const {
  if (c.dp < 0 || c.dp >= dp_ || c.tp < 0 || c.tp >= tp_ || c.pp < 0 || c.pp >= pp_ ||
      c.cp < 0 || c.cp >= cp_)
    input_error(
        "coordinates (dp {}, tp {}, pp {}, cp {}) are outside the grid (dp {}, tp {}, pp {}, cp {})",
        c.dp, c.tp, c.pp, c.cp, dp_, tp_, pp_, cp_);
  return c.tp * stride(Axis::Tp) + c.dp * stride(Axis::Dp) + c.pp * stride(Axis::Pp) +
         c.cp * stride(Axis::Cp);
}

std::vector<int> RankGrid::group_ranks(Axis axis, int rank) const {
  RankCoords c = coords(rank);
  const int idx = axis == Axis::Tp ? c.tp : axis == Axis::Dp ? c.dp : axis == Axis::Pp ? c.pp : c.cp;
  int s = stride(axis);
  int base = rank - idx * s;
  std::vector<int> out(static_cast<std::size_t>(size(axis)));
  for (int i = 0; i < size(axis); ++i) out[static_cast<std::size_t>(i)] = base + i * s;
  return out;
}

std::vector<std::vector<int>> RankGrid::all_groups(Axis axis) const {
  std::vector<std::vector<int>> out;
  out.reserve(static_cast<std::size_t>(world_size() / size(axis)));
  const int s = stride(axis);
  const int n = size(axis);
  for (int r = 0; r < world_size(); ++r) {
    if ((r / s) % n != 0) continue;  // first member of its group
    std::vector<int> g(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) g[static_cast<std::size_t>(i)] = r + i * s;
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace strata::costmodel
