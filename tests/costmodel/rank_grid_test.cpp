// RankGrid against a deliberately naive enumerator: nested loops in the order the
// order string names, outermost last, numbering ranks as they are visited.
#include "costmodel/rank_grid.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "common/errors.h"

namespace sc = strata::costmodel;

namespace {

struct Naive {
  std::vector<sc::RankCoords> coords;  // by rank
};

Naive enumerate(int dp, int tp, int pp, const std::string& order) {
  // order "a-b-c": a innermost. Visit c (outer), b, a (inner).
  std::vector<std::string> names;
  std::string cur;
  for (char ch : order + "-") {
    if (ch == '-') names.push_back(cur), cur.clear();
    else cur += ch;
  }
  auto size = [&](const std::string& n) { return n == "tp" ? tp : n == "dp" ? dp : pp; };
  Naive out;
  for (int c = 0; c < size(names[2]); ++c)
    for (int b = 0; b < size(names[1]); ++b)
      for (int a = 0; a < size(names[0]); ++a) {
        sc::RankCoords rc;
        auto set = [&](const std::string& n, int v) {
          if (n == "tp") rc.tp = v;
          else if (n == "dp") rc.dp = v;
          else rc.pp = v;
        };
        set(names[0], a);
        set(names[1], b);
        set(names[2], c);
        out.coords.push_back(rc);
      }
  return out;
}

int idx(const sc::RankCoords& c, sc::Axis a) {
  return a == sc::Axis::Tp ? c.tp : a == sc::Axis::Dp ? c.dp : c.pp;
}

bool same_group(const sc::RankCoords& x, const sc::RankCoords& y, sc::Axis a) {
  // Same coordinates on the two other axes.
  return (a == sc::Axis::Tp || x.tp == y.tp) && (a == sc::Axis::Dp || x.dp == y.dp) &&
         (a == sc::Axis::Pp || x.pp == y.pp);
}

const std::vector<std::string> kOrders = {"tp-dp-pp", "tp-pp-dp", "dp-tp-pp",
                                          "dp-pp-tp", "pp-tp-dp", "pp-dp-tp"};

}  // namespace

TEST(RankGrid, MatchesNaiveEnumeratorOverManyShapesAndOrders) {
  // (dp, tp, pp), up to 10240 ranks.
  const std::vector<std::tuple<int, int, int>> shapes = {
      {1, 1, 1},  {2, 1, 1},  {1, 2, 1},   {1, 1, 2},   {2, 2, 2},  {3, 2, 4},  {4, 8, 2},
      {5, 3, 7},  {8, 8, 8},  {16, 8, 4},  {2, 3, 5},   {64, 8, 1}, {1, 8, 64}, {12, 4, 6},
      {32, 8, 16}, {80, 8, 16}, {7, 1, 11}, {128, 2, 3}, {20, 4, 128}};
  int cases = 0;
  for (const auto& [dp, tp, pp] : shapes) {
    for (const auto& order : kOrders) {
      ++cases;
      SCOPED_TRACE(testing::Message() << "dp " << dp << " tp " << tp << " pp " << pp << " " << order);
      sc::RankGrid g(dp, tp, pp, order);
      Naive n = enumerate(dp, tp, pp, order);
      ASSERT_EQ(g.world_size(), static_cast<int>(n.coords.size()));
      const bool small = g.world_size() <= 512;
      for (int r = 0; r < g.world_size(); ++r) {
        ASSERT_EQ(g.coords(r), n.coords[static_cast<std::size_t>(r)]) << "rank " << r;
        ASSERT_EQ(g.rank(n.coords[static_cast<std::size_t>(r)]), r);
        // Group membership checked quadratically only on small grids; large grids
        // check a sample of ranks.
        if (!small && r % 97 != 0) continue;
        for (sc::Axis a : {sc::Axis::Tp, sc::Axis::Dp, sc::Axis::Pp}) {
          std::vector<std::pair<int, int>> expected;  // (axis index, rank)
          for (int q = 0; q < g.world_size(); ++q)
            if (same_group(n.coords[static_cast<std::size_t>(q)], n.coords[static_cast<std::size_t>(r)], a))
              expected.emplace_back(idx(n.coords[static_cast<std::size_t>(q)], a), q);
          std::sort(expected.begin(), expected.end());
          std::vector<int> want;
          for (auto& e : expected) want.push_back(e.second);
          ASSERT_EQ(g.group_ranks(a, r), want) << sc::to_string(a) << " group of rank " << r;
        }
      }
      for (sc::Axis a : {sc::Axis::Tp, sc::Axis::Dp, sc::Axis::Pp}) {
        auto groups = g.all_groups(a);
        std::set<int> covered;
        for (const auto& grp : groups) {
          ASSERT_EQ(grp, g.group_ranks(a, grp.front()));
          for (int r : grp) ASSERT_TRUE(covered.insert(r).second) << "rank " << r << " twice";
        }
        EXPECT_EQ(static_cast<int>(covered.size()), g.world_size());
        // Stride: distance between consecutive members.
        if (groups.front().size() > 1) { EXPECT_EQ(groups.front()[1] - groups.front()[0], g.stride(a)); }
      }
    }
  }
  EXPECT_GE(cases, 100);
}

TEST(RankGrid, DefaultOrderIsTpInnermostThenDpThenPp) {
  sc::RankGrid g(2, 4, 3);
  EXPECT_EQ(g.order(), "tp-dp-pp");
  EXPECT_EQ(g.stride(sc::Axis::Tp), 1);
  EXPECT_EQ(g.stride(sc::Axis::Dp), 4);
  EXPECT_EQ(g.stride(sc::Axis::Pp), 8);
  EXPECT_EQ(g.group_ranks(sc::Axis::Tp, 5), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(g.group_ranks(sc::Axis::Pp, 1), (std::vector<int>{1, 9, 17}));
}

TEST(RankGrid, ContextParallelSitsRightAfterTpUnlessTheOrderNamesIt) {
  // dp 2, tp 2, pp 2, cp 2 in "tp-dp-pp": axes tp, cp, dp, pp with strides 1, 2, 4, 8.
  sc::RankGrid g(2, 2, 2, "tp-dp-pp", 2);
  EXPECT_EQ(g.world_size(), 16);
  EXPECT_EQ(g.stride(sc::Axis::Cp), 2);
  EXPECT_EQ(g.stride(sc::Axis::Dp), 4);
  EXPECT_EQ(g.stride(sc::Axis::Pp), 8);
  // 13 = tp 1 + cp 0 * 2 + dp 1 * 4 + pp 1 * 8
  EXPECT_EQ(g.coords(13), (sc::RankCoords{1, 1, 1, 0}));
  EXPECT_EQ(g.group_ranks(sc::Axis::Cp, 13), (std::vector<int>{13, 15}));
  EXPECT_EQ(g.group_ranks(sc::Axis::Dp, 13), (std::vector<int>{9, 13}));
  EXPECT_EQ(g.rank({1, 1, 1, 1}), 15);
  // Named first: cp is innermost, then tp.
  sc::RankGrid h(2, 2, 2, "cp-tp-dp-pp", 2);
  EXPECT_EQ(h.stride(sc::Axis::Cp), 1);
  EXPECT_EQ(h.stride(sc::Axis::Tp), 2);
  EXPECT_EQ(h.group_ranks(sc::Axis::Tp, 5), (std::vector<int>{5, 7}));
  EXPECT_EQ(h.all_groups(sc::Axis::Cp).size(), 8u);
}

TEST(RankGrid, RejectsBadInputWithTheOffendingValue) {
  auto msg = [](auto f) {
    try {
      f();
    } catch (const strata::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg([] { sc::RankGrid(0, 1, 1); }).find("dp (0)"), std::string::npos);
  EXPECT_NE(msg([] { sc::RankGrid(1, -2, 1); }).find("tp (-2)"), std::string::npos);
  EXPECT_NE(msg([] { sc::RankGrid(1, 1, 0); }).find("pp (0)"), std::string::npos);
  EXPECT_NE(msg([] { sc::RankGrid(1, 1, 1, "tp-dp-pp", 0); }).find("cp (0)"), std::string::npos);
  for (const char* bad : {"tp-dp", "tp-tp-pp", "tp-dp-pp-dp", "TP-DP-PP", "", "tp-dp-xx", "tp--dp",
                          "tp-cp-dp", "tp-cp-dp-pp-cp"})
    EXPECT_NE(msg([&] { sc::RankGrid(1, 1, 1, bad); }).find("rank order"), std::string::npos) << bad;
  EXPECT_NE(msg([] { sc::RankGrid(65536, 65536, 2); }).find("exceeds"), std::string::npos);
  sc::RankGrid g(2, 2, 2);
  EXPECT_THROW(g.coords(8), strata::InputError);
  EXPECT_THROW(g.coords(-1), strata::InputError);
  EXPECT_THROW(g.rank({2, 0, 0}), strata::InputError);
}
