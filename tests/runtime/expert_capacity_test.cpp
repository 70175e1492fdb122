// Token dropping with a capacity factor (runtime/expert_capacity.h): the capacity and
// which (token, slot) assignments each expert keeps, worked out by hand.
#include "runtime/expert_capacity.h"

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

TEST(ExpertCapacity, MegatronsCeiling) {
  // ceil(8 * 2 / 4 * 1.0) = 4; ceil(8 * 2 / 4 * 1.1) = ceil(4.4) = 5; ceil(6 * 1 / 4 * 1.0) = 2.
  EXPECT_EQ(expert_capacity(8, 2, 4, 1.0), 4u);
  EXPECT_EQ(expert_capacity(8, 2, 4, 1.1), 5u);
  EXPECT_EQ(expert_capacity(6, 1, 4, 1.0), 2u);
}

TEST(ExpertCapacity, EachExpertKeepsItsLargestWeights) {
  // 4 tokens, top-1, 2 experts, capacity factor 1: capacity ceil(4 / 2 * 1) = 2.
  // Expert 0 gets tokens 0, 1, 2 with weights 0.6, 0.9, 0.7: keeps 1 and 2, drops 0.
  // Expert 1 gets token 3 only: kept.
  Routing<float> r;
  r.tokens = 4;
  r.top_k = 1;
  r.expert = {0, 0, 0, 1};
  r.weight = {0.6f, 0.9f, 0.7f, 0.8f};
  EXPECT_EQ(kept_experts(r, 2, 1.0), (std::vector<std::int32_t>{-1, 0, 0, 1}));
  // Equal weights: the lower tokens stay.
  r.weight = {0.5f, 0.5f, 0.5f, 0.5f};
  EXPECT_EQ(kept_experts(r, 2, 1.0), (std::vector<std::int32_t>{0, 0, -1, 1}));
  // No capacity factor, or a capacity above the token count (ceil(4 / 2 * 2.5) = 5 > 4):
  // nothing dropped.
  EXPECT_EQ(kept_experts(r, 2, 0.0), r.expert);
  EXPECT_EQ(kept_experts(r, 2, 2.5), r.expert);
}

}  // namespace
}  // namespace strata::runtime
