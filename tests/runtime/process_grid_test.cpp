// The runtime's expert groups (ProcessGrid's ep / edp communicators) are the cost
// model's Megatron-Core folding (costmodel::expert_group_ranks), for every small layout.
#include "runtime/process_grid.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "costmodel/expert_dispatch_cost.h"

namespace strata::runtime {
namespace {

TEST(ProcessGrid, ExpertGroupsAreTheCostModelsFolding) {
  int layouts = 0;
  for (int dp : {1, 2, 3, 4, 8})
    for (int tp : {1, 2, 4})
      for (int pp : {1, 2, 3})
        for (int ep : {1, 2, 3, 4, 8}) {
          if ((dp * tp) % ep != 0) continue;
          const costmodel::RankGrid g(dp, tp, pp);
          ++layouts;
          for (int r = 0; r < g.world_size(); ++r) {
            EXPECT_EQ(expert_parallel_ranks(g, ep, r),
                      costmodel::expert_group_ranks(g, ep, 1, costmodel::ExpertAxis::Ep, r))
                << "dp " << dp << " tp " << tp << " pp " << pp << " ep " << ep << " rank " << r;
            EXPECT_EQ(expert_data_parallel_ranks(g, ep, r),
                      costmodel::expert_group_ranks(g, ep, 1, costmodel::ExpertAxis::Edp, r))
                << "dp " << dp << " tp " << tp << " pp " << pp << " ep " << ep << " rank " << r;
          }
        }
  EXPECT_GT(layouts, 60);
}

TEST(ProcessGrid, ExpertGroupsByHand) {
  // dp 2 x tp 2 x pp 2, ep 2: stage 1 holds world ranks 4..7 (tp fastest); ep pairs are
  // consecutive ranks (4, 5), (6, 7); edp pairs (4, 6), (5, 7).
  const costmodel::RankGrid g(2, 2, 2);
  EXPECT_EQ(expert_parallel_ranks(g, 2, 6), (std::vector<int>{6, 7}));
  EXPECT_EQ(expert_data_parallel_ranks(g, 2, 6), (std::vector<int>{4, 6}));
  EXPECT_THROW(expert_parallel_ranks(g, 3, 0), InputError);
}

}  // namespace
}  // namespace strata::runtime
