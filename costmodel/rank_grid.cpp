#include "costmodel/rank_grid.h"

#include <climits>

#include "common/checked_math.h"
#include "common/errors.h"

namespace strata::costmodel {

const char* to_string(Axis a) {
  switch (a) {
    case Axis::Tp: return "tp";
    case Axis::Dp: return "dp";
    case Axis::Pp: return "pp";
  }
  return "?";
}

namespace {

bool parse_axis(const std::string& s, Axis& out) {
  if (s == "tp") out = Axis::Tp;
  else if (s == "dp") out = Axis::Dp;
  else if (s == "pp") out = Axis::Pp;
  else return false;
  return true;
}

}  // namespace

RankGrid::RankGrid(int dp, int tp, int pp, const std::string& order)
    : dp_(dp), tp_(tp), pp_(pp), order_(order) {
  if (dp < 1) input_error("rank grid dp ({}) must be >= 1", dp);
  if (tp < 1) input_error("rank grid tp ({}) must be >= 1", tp);
  if (pp < 1) input_error("rank grid pp ({}) must be >= 1", pp);
  std::int64_t world = checked_mul(checked_mul(dp, tp, "dp*tp"), pp, "dp*tp*pp");
  if (world > INT_MAX) input_error("rank grid dp*tp*pp ({}) exceeds {} ranks", world, INT_MAX);

  // "tp-dp-pp": exactly three distinct axis names separated by '-'.
  const std::string expected = "a permutation of tp, dp, pp joined by '-' (e.g. tp-dp-pp)";
  std::size_t start = 0;
  int count = 0;
  bool seen[3] = {false, false, false};
  while (true) {
    std::size_t dash = order.find('-', start);
    std::string part = order.substr(start, dash == std::string::npos ? std::string::npos : dash - start);
    Axis a;
    if (count >= 3 || !parse_axis(part, a) || seen[static_cast<int>(a)])
      input_error("rank order '{}' is invalid: expected {}", order, expected);
    seen[static_cast<int>(a)] = true;
    axes_[count++] = a;
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  if (count != 3) input_error("rank order '{}' is invalid: expected {}", order, expected);
}

int RankGrid::size(Axis a) const {
  switch (a) {
    case Axis::Tp: return tp_;
    case Axis::Dp: return dp_;
    case Axis::Pp: return pp_;
  }
  return 1;
}

int RankGrid::stride(Axis axis) const {
  int s = 1;
  for (Axis a : axes_) {
    if (a == axis) return s;
    s *= size(a);
  }
  return s;
}

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
    else c.pp = idx;
  }
  return c;
}

int RankGrid::rank(const RankCoords& c) const {
  if (c.dp < 0 || c.dp >= dp_ || c.tp < 0 || c.tp >= tp_ || c.pp < 0 || c.pp >= pp_)
    input_error("coordinates (dp {}, tp {}, pp {}) are outside the grid (dp {}, tp {}, pp {})",
                c.dp, c.tp, c.pp, dp_, tp_, pp_);
  return c.tp * stride(Axis::Tp) + c.dp * stride(Axis::Dp) + c.pp * stride(Axis::Pp);
}

std::vector<int> RankGrid::group_ranks(Axis axis, int rank) const {
  RankCoords c = coords(rank);
  int idx = axis == Axis::Tp ? c.tp : axis == Axis::Dp ? c.dp : c.pp;
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
