// Megatron-LM's --account-for-embedding/loss-in-pipeline-split (planner/embedding_loss_split.h):
// block counts by hand from get_num_layers_to_build, the layer groups they give, the
// inverse the export uses, and Megatron-LM's divisibility rules refused by name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/errors.h"
#include "planner/embedding_loss_split.h"
#include "planner/first_last_stages.h"
#include "tests/input_error_of.h"

namespace strata::planner {
namespace {

using Blocks = std::vector<std::int64_t>;

TEST(EmbeddingLossSplit, Qwen3On32VirtualStagesByHand) {
  // 94 blocks + embedding + loss = 96 over pp 8 x vpp 4 = 32 chunks: 3 each; chunk 0 of rank 0
  // (v 0) gives one to the embedding, chunk 3 of rank 7 (v 31) one to the loss.
  Blocks want(32, 3);
  want.front() = 2;
  want.back() = 2;
  const Blocks blocks = embedding_loss_split_blocks(94, 8, 4, {true, true}, "job");
  EXPECT_EQ(blocks, want);
  const auto groups = stage_layers_from_blocks(blocks, 94);
  ASSERT_EQ(groups.size(), 32u);
  EXPECT_EQ(groups[0], (std::vector<int>{0, 1, 2}));       // embedding, blocks 1-2
  EXPECT_EQ(groups[1], (std::vector<int>{3, 4, 5}));       // rank 1, chunk 0
  EXPECT_EQ(groups[31], (std::vector<int>{93, 94, 95}));   // blocks 93-94 and the head
  EXPECT_EQ(embedding_loss_split_of(blocks, 94, 8, 4), (EmbeddingLossSplit{true, true}));
}

TEST(EmbeddingLossSplit, OneFlagAndStagesWithOnlyTheEmbeddingOrTheLoss) {
  // 31 blocks + the loss = 32 over pp 4 (vpp 1): 8 each, the last rank 7 blocks + head.
  const Blocks loss_only = embedding_loss_split_blocks(31, 4, 1, {false, true}, "job");
  EXPECT_EQ(loss_only, (Blocks{8, 8, 8, 7}));
  EXPECT_EQ(embedding_loss_split_of(loss_only, 31, 4, 1), (EmbeddingLossSplit{false, true}));
  // 94 + 2 = 96 over pp 32 x vpp 3 = 96 chunks: one each, so the first chunk holds only the
  // embedding and the last only the loss (the Model-Zoo tp2 pp32 layout).
  const Blocks one_each = embedding_loss_split_blocks(94, 32, 3, {true, true}, "job");
  EXPECT_EQ(one_each.front(), 0);
  EXPECT_EQ(one_each.back(), 0);
  const auto groups = stage_layers_from_blocks(one_each, 94);
  EXPECT_EQ(groups.front(), (std::vector<int>{0}));
  EXPECT_EQ(groups.back(), (std::vector<int>{95}));
  // The even split is no account-for split.
  EXPECT_EQ(embedding_loss_split_of(Blocks(8, 4), 32, 8, 1), std::nullopt);
}

TEST(EmbeddingLossSplit, MegatronsRulesAreRefusedByName) {
  const auto error_of = [](std::int64_t layers, int pp, int vpp, EmbeddingLossSplit s) {
    return strata::testing::input_error_of([&] { embedding_loss_split_blocks(layers, pp, vpp, s, "job"); });
  };
  EXPECT_NE(error_of(94, 8, 1, {false, false}).find("neither"), std::string::npos);
  // 95 + 2 = 97 is not a multiple of 8.
  EXPECT_NE(error_of(95, 8, 1, {true, true}).find("divisible by the pipeline size (8)"), std::string::npos);
  // 94 + 2 = 96, 12 per rank, not a multiple of vpp 5.
  EXPECT_NE(error_of(94, 8, 5, {true, true}).find("virtual stages per pipeline rank (5)"), std::string::npos);
}

}  // namespace
}  // namespace strata::planner
