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
      for (int cp : {1, 2})
        for (int pp : {1, 2, 3})
          for (int ep : {1, 2, 3, 4, 8})
            for (int etp : {1, 2, 4}) {
              if ((dp * tp * cp) % (ep * etp) != 0) continue;
              const costmodel::RankGrid g(dp, tp, pp, "tp-dp-pp", cp);
              ++layouts;
              for (int r = 0; r < g.world_size(); ++r) {
                using costmodel::ExpertAxis;
                const auto where = ::testing::Message() << "dp " << dp << " tp " << tp << " cp " << cp << " pp "
                                                        << pp << " ep " << ep << " etp " << etp << " rank " << r;
                EXPECT_EQ(expert_parallel_ranks(g, ep, r, etp),
                          costmodel::expert_group_ranks(g, ep, etp, ExpertAxis::Ep, r)) << where;
                EXPECT_EQ(expert_data_parallel_ranks(g, ep, r, etp),
                          costmodel::expert_group_ranks(g, ep, etp, ExpertAxis::Edp, r)) << where;
                EXPECT_EQ(expert_tensor_parallel_ranks(g, ep, r, etp),
                          costmodel::expert_group_ranks(g, ep, etp, ExpertAxis::Etp, r)) << where;
              }
            }
  EXPECT_GT(layouts, 300);
}

TEST(ProcessGrid, ExpertGroupsByHand) {
  // dp 2 x tp 2 x pp 2, ep 2: stage 1 holds world ranks 4..7 (tp fastest); ep pairs are
  // consecutive ranks (4, 5), (6, 7); edp pairs (4, 6), (5, 7).
  const costmodel::RankGrid g(2, 2, 2);
  EXPECT_EQ(expert_parallel_ranks(g, 2, 6), (std::vector<int>{6, 7}));
  EXPECT_EQ(expert_data_parallel_ranks(g, 2, 6), (std::vector<int>{4, 6}));
  EXPECT_THROW(expert_parallel_ranks(g, 3, 0), InputError);
  // etp 2, ep 2 on dp 2 x tp 2 x cp 2 (8 ranks a stage, attention index tp + 2 cp + 4 dp):
  // index = etp_i + 2 (ep_i + 2 edp_i); rank 6 = (etp 0, ep 1, edp 1).
  const costmodel::RankGrid c(2, 2, 1, "tp-dp-pp", 2);
  EXPECT_EQ(expert_tensor_parallel_ranks(c, 2, 6, 2), (std::vector<int>{6, 7}));
  EXPECT_EQ(expert_parallel_ranks(c, 2, 6, 2), (std::vector<int>{4, 6}));
  EXPECT_EQ(expert_data_parallel_ranks(c, 2, 6, 2), (std::vector<int>{2, 6}));
  EXPECT_THROW(expert_parallel_ranks(c, 4, 0, 4), InputError);  // 16 > 8 ranks a stage
}

}  // namespace
}  // namespace strata::runtime
