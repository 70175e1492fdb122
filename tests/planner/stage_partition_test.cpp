#include "planner/stage_partition.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "common/errors.h"

namespace strata::planner {
namespace {

// Brute force: every way to cut the L + 2 groups into `stages` contiguous pieces, each
// holding at least one block (group 1..L); returns the smallest max piece cost.
double brute_force_optimum(const std::vector<double>& costs, int stages) {
  const int n = static_cast<int>(costs.size());
  const int blocks = n - 2;
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> cuts;  // cut after group index (exclusive end of a piece)
  std::function<void(int, int)> rec = [&](int begin, int left) {
    if (left == 1) {
      std::vector<int> ends = cuts;
      ends.push_back(n);
      int b = 0;
      double worst = 0;
      for (int e : ends) {
        bool has_block = false;
        double c = 0;
        for (int g = b; g < e; ++g) {
          c += costs[g];
          has_block |= (g >= 1 && g <= blocks);
        }
        if (!has_block) return;
        worst = std::max(worst, c);
        b = e;
      }
      best = std::min(best, worst);
      return;
    }
    for (int e = begin + 1; e <= n - (left - 1); ++e) {
      cuts.push_back(e);
      rec(e, left - 1);
      cuts.pop_back();
    }
  };
  rec(0, stages);
  return best;
}

void expect_well_formed(const StagePartition& p, int groups, int stages) {
  ASSERT_EQ(static_cast<int>(p.stages().size()), stages);
  int next = 0;
  for (const auto& s : p.stages()) {
    ASSERT_FALSE(s.empty());
    bool has_block = false;
    for (int g : s) {
      EXPECT_EQ(g, next++);
      has_block |= (g >= 1 && g <= groups - 2);
    }
    EXPECT_TRUE(has_block) << "a virtual stage without a transformer block";
  }
  EXPECT_EQ(next, groups);
}

TEST(StagePartition, MatchesBruteForceOnRandomCosts) {
  std::mt19937 rng(12345);
  std::uniform_real_distribution<double> u(0.1, 10.0);
  int cases = 0;
  for (int layers = 1; layers <= 8; ++layers) {
    for (int stages = 1; stages <= layers; ++stages) {
      for (int trial = 0; trial < 6; ++trial) {
        std::vector<double> costs(layers + 2);
        for (double& c : costs) c = u(rng);
        if (trial == 0) costs.front() = costs.back() = 0;  // free embedding / head
        if (trial == 1) costs.back() = 25;                 // a very heavy LM head
        const StagePartition p = StagePartition::balance(costs, stages);
        expect_well_formed(p, layers + 2, stages);
        const double opt = brute_force_optimum(costs, stages);
        EXPECT_NEAR(p.max_cost(), opt, 1e-9 * opt) << "layers " << layers << " stages " << stages;
        EXPECT_DOUBLE_EQ(StagePartition::max_stage_cost(costs, p.stages()), p.max_cost());
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 36 * 6);
}

TEST(StagePartition, UniformBlocksGiveTheEvenSplit) {
  for (int layers : {12, 24, 96}) {
    for (int stages = 1; stages <= layers; ++stages) {
      if (layers % stages != 0) continue;
      std::vector<double> costs(layers + 2, 1.0);
      costs.front() = costs.back() = 0.0;
      const StagePartition p = StagePartition::balance(costs, stages);
      for (const auto& s : p.stages()) {
        int blocks = 0;
        for (int g : s) blocks += (g >= 1 && g <= layers);
        EXPECT_EQ(blocks, layers / stages) << layers << " layers on " << stages << " stages";
      }
      EXPECT_DOUBLE_EQ(p.max_cost(), static_cast<double>(layers / stages));
    }
  }
}

// Blocks of 0.1 (not a binary fraction): pieces of equal length differ in their last bits
// depending on where they start, so the optimal cap is one of several near-equal sums. The
// split must still be the even one, and its cost the pieces' own.
TEST(StagePartition, RoundedEqualBlocksStillGiveTheEvenSplit) {
  for (int layers : {12, 60, 96}) {
    for (int stages = 1; stages <= layers; ++stages) {
      if (layers % stages != 0) continue;
      std::vector<double> costs(layers + 2, 0.1);
      costs.front() = costs.back() = 0.0;
      const StagePartition p = StagePartition::balance(costs, stages);
      expect_well_formed(p, layers + 2, stages);
      for (const auto& s : p.stages()) {
        int blocks = 0;
        for (int g : s) blocks += (g >= 1 && g <= layers);
        EXPECT_EQ(blocks, layers / stages) << layers << " layers on " << stages << " stages";
      }
      EXPECT_NEAR(p.max_cost(), 0.1 * (layers / stages), 1e-12);
    }
  }
}

TEST(StagePartition, HeavyHeadMovesBlocksOffTheLastStage) {
  // 8 blocks of cost 1, a head worth 3 blocks: the last stage must take fewer blocks.
  std::vector<double> costs(10, 1.0);
  costs.front() = 0.0;
  costs.back() = 3.0;
  const StagePartition p = StagePartition::balance(costs, 2);
  EXPECT_DOUBLE_EQ(p.max_cost(), 6.0);  // 5 blocks | 3 blocks + head (or 6 | 2 + head)
  const auto blocks = [](const std::vector<int>& s) {
    return std::count_if(s.begin(), s.end(), [](int g) { return g >= 1 && g <= 8; });
  };
  EXPECT_LT(blocks(p.stages().back()), blocks(p.stages().front()));
}

TEST(StagePartition, IsDeterministic) {
  std::vector<double> costs = {0.5, 1, 2, 1, 3, 1, 1, 2, 0.7};
  const StagePartition a = StagePartition::balance(costs, 3);
  const StagePartition b = StagePartition::balance(costs, 3);
  EXPECT_EQ(a.stages(), b.stages());
}

TEST(StagePartition, TiesPreferTheEvenestSplit) {
  // 10 equal blocks on 4 stages: optimum 3; the split is 2,3,2,3 rather than 3,3,3,1.
  std::vector<double> costs(12, 1.0);
  costs.front() = costs.back() = 0.0;
  const StagePartition p = StagePartition::balance(costs, 4);
  EXPECT_DOUBLE_EQ(p.max_cost(), 3.0);
  for (double c : p.stage_costs()) EXPECT_GE(c, 2.0);
}

TEST(StagePartition, RespectsAMemoryCap) {
  // Costs alone put 3 blocks on each stage; memory allows at most 2 heavy-memory blocks.
  std::vector<double> costs = {0, 1, 1, 1, 1, 1, 1, 0};
  std::vector<double> memory = {0, 5, 5, 1, 1, 1, 1, 0};
  const StagePartition free = StagePartition::balance(costs, 2);
  EXPECT_DOUBLE_EQ(free.max_cost(), 3.0);
  const StagePartition capped = StagePartition::balance(costs, 2, memory, 10.0);
  EXPECT_TRUE(capped.fits_memory());
  EXPECT_DOUBLE_EQ(capped.max_cost(), 4.0);  // blocks 1-2 | 3-6
  for (const auto& s : capped.stages()) {
    double mem = 0;
    for (int g : s) mem += memory[g];
    EXPECT_LE(mem, 10.0);
  }
  const StagePartition impossible = StagePartition::balance(costs, 2, memory, 4.0);
  EXPECT_FALSE(impossible.fits_memory());
  EXPECT_DOUBLE_EQ(impossible.max_cost(), 3.0);  // falls back to the unconstrained split
}

// Megatron-LM's first / last split: 10 blocks of cost 1, embedding 0.5, head 1.5, pp 4.
// Per middle count e (ranks 1, 2) and first count F (last = 10 - 2e - F), the worst stage is
// max(0.5 + F, e, 11.5 - 2e - F): e 1 -> 5.5 (F 4 or 5), e 2 -> 4.5 (F 3 or 4),
// e 3 -> 3.5 (F 2 or 3), e 4 -> max(1.5, 4, 2.5) = 4. Best 3.5 at e 3, F 2 (first found).
TEST(StagePartition, FirstLastSplitByHand) {
  std::vector<double> costs(12, 1.0);
  costs.front() = 0.5;
  costs.back() = 1.5;
  const StagePartition p = StagePartition::first_last(costs, 4, 1);
  ASSERT_EQ(p.stages().size(), 4u);
  EXPECT_EQ(p.stages()[0], (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(p.stages()[1], (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(p.stages()[2], (std::vector<int>{6, 7, 8}));
  EXPECT_EQ(p.stages()[3], (std::vector<int>{9, 10, 11}));
  EXPECT_EQ(p.stage_costs(), (std::vector<double>{2.5, 3, 3, 3.5}));
  EXPECT_DOUBLE_EQ(p.max_cost(), 3.5);
  // pp 2 x vpp 2: first F (even), last 10 - F, each rank's two chunks alike; virtual stages
  // cost 0.5 + F/2, (10 - F)/2, F/2, (10 - F)/2 + 1.5: F 2 -> 5.5, 4 -> 4.5, 6 -> 3.5,
  // 8 -> 4.5. Best F 6: blocks 3, 2, 3, 2.
  const StagePartition v = StagePartition::first_last(costs, 2, 2);
  ASSERT_EQ(v.stages().size(), 4u);
  EXPECT_EQ(v.stages()[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(v.stages()[1], (std::vector<int>{4, 5}));
  EXPECT_EQ(v.stages()[2], (std::vector<int>{6, 7, 8}));
  EXPECT_EQ(v.stages()[3], (std::vector<int>{9, 10, 11}));
  EXPECT_DOUBLE_EQ(v.max_cost(), 3.5);
  // 10 blocks are no multiple of 4 chunks per rank: no first / last counts fit.
  EXPECT_TRUE(StagePartition::first_last(costs, 2, 4).stages().empty());
  // It never beats the free split's optimum (brute force), here on random costs.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.1, 2.0);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> c(14);
    for (double& x : c) x = u(rng);
    for (int pp : {2, 3, 4}) {
      const StagePartition f = StagePartition::first_last(c, pp, 1);
      ASSERT_FALSE(f.stages().empty());
      EXPECT_GE(f.max_cost(), brute_force_optimum(c, pp) * (1 - 1e-12));
    }
  }
}

TEST(StagePartition, RejectsBadInput) {
  EXPECT_THROW(StagePartition::balance({1, 1}, 1), InputError);          // no block
  EXPECT_THROW(StagePartition::balance({0, 1, 1, 0}, 3), InputError);    // stages > layers
  EXPECT_THROW(StagePartition::balance({0, 1, 1, 0}, 0), InputError);
  EXPECT_THROW(StagePartition::balance({0, -1, 1, 0}, 1), InputError);   // negative cost
  EXPECT_THROW(StagePartition::balance({0, 1, 1, 0}, 1, {1, 1}, 5.0), InputError);
}

}  // namespace
}  // namespace strata::planner
