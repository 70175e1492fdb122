// Megatron-LM's uneven first/last pipeline stages (planner/first_last_stages.h): block
// counts worked out by hand from Megatron-LM's rules, the layer groups they give, the
// inverse the export uses, and each rule Megatron-LM enforces refused by name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/errors.h"
#include "planner/first_last_stages.h"
#include "tests/input_error_of.h"

namespace strata::planner {
namespace {

using Blocks = std::vector<std::int64_t>;

std::string error_of(std::int64_t layers, int pp, int vpp, FirstLastStages fl) {
  return strata::testing::input_error_of([&] { first_last_stage_blocks(layers, pp, vpp, fl, "job"); });
}

TEST(FirstLastStages, DeepSeekV3On16StagesByHand) {
  // 61 blocks, pp 16, first 2, last 3: the 14 middle ranks share 61 - 2 - 3 = 56 blocks,
  // 56 / 14 = 4 each. 2 + 14 x 4 + 3 = 61.
  Blocks want(16, 4);
  want.front() = 2;
  want.back() = 3;
  const Blocks blocks = first_last_stage_blocks(61, 16, 1, {2, 3}, "job");
  EXPECT_EQ(blocks, want);
  // Groups: the embedding (0) and blocks 1-2 on rank 0; rank k = 1..14 holds blocks
  // 3 + 4 (k - 1) .. 6 + 4 (k - 1) (rank 14: 55-58); rank 15 blocks 59-61 and the head (62).
  const auto groups = stage_layers_from_blocks(blocks, 61);
  ASSERT_EQ(groups.size(), 16u);
  EXPECT_EQ(groups[0], (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(groups[1], (std::vector<int>{3, 4, 5, 6}));
  EXPECT_EQ(groups[14], (std::vector<int>{55, 56, 57, 58}));
  EXPECT_EQ(groups[15], (std::vector<int>{59, 60, 61, 62}));
  // Only the first given: the other 15 ranks share 61 - 1 = 60, 4 each.
  Blocks first_only(16, 4);
  first_only.front() = 1;
  EXPECT_EQ(first_last_stage_blocks(61, 16, 1, {1, std::nullopt}, "job"), first_only);
  // Only the last given: 61 - 1 = 60 over the first 15 ranks.
  Blocks last_only(16, 4);
  last_only.back() = 1;
  EXPECT_EQ(first_last_stage_blocks(61, 16, 1, {std::nullopt, 1}, "job"), last_only);
}

TEST(FirstLastStages, VirtualStagesSplitEveryRanksBlocksOverItsChunksByHand) {
  // 30 blocks, pp 4, vpp 2, first 4, last 6: middle ranks 1 and 2 share 30 - 10 = 20, 10
  // each; every chunk of a rank holds its blocks / 2: ranks hold 2, 5, 5, 3 per chunk.
  // Groups (1-based blocks): v0 {0, 1, 2}, v1 3-7, v2 8-12, v3 13-15, v4 16-17, ...
  // Megatron's offsets (transformer_layer.py): a chunk row holds 4/2 + 20/2 + 6/2 = 15
  // blocks, so chunk 1 of rank 0 starts at Megatron's layer 15 (0-based; strata's group 16),
  // after chunk 0 of every rank.
  const Blocks blocks = first_last_stage_blocks(30, 4, 2, {4, 6}, "job");
  EXPECT_EQ(blocks, (Blocks{2, 5, 5, 3, 2, 5, 5, 3}));
  const auto groups = stage_layers_from_blocks(blocks, 30);
  EXPECT_EQ(groups[3], (std::vector<int>{13, 14, 15}));  // chunk 0 of the last rank
  EXPECT_EQ(groups[4], (std::vector<int>{16, 17}));      // chunk 1 of rank 0: blocks 16-17
  EXPECT_EQ(groups[7], (std::vector<int>{28, 29, 30, 31}));  // the head (31) on the last one
}

TEST(FirstLastStages, TheExportFindsTheCountsBackOrSaysThereAreNone) {
  const Blocks ds = first_last_stage_blocks(61, 16, 1, {2, 3}, "job");
  EXPECT_EQ(first_last_of(ds, 16, 1), (FirstLastStages{2, 3}));
  EXPECT_EQ(first_last_of(Blocks{2, 5, 5, 3, 2, 5, 5, 3}, 4, 2), (FirstLastStages{4, 6}));
  EXPECT_EQ(first_last_of(Blocks{1, 4, 4, 1}, 4, 1), (FirstLastStages{1, 1}));
  EXPECT_EQ(first_last_of(Blocks{7, 3}, 2, 1), (FirstLastStages{7, 3}));
  // Even: no flags needed.
  EXPECT_EQ(first_last_of(Blocks{4, 4, 4, 4}, 4, 1), std::nullopt);
  // Middle ranks that differ, or a rank whose chunks differ: only a layout says that.
  EXPECT_EQ(first_last_of(Blocks{3, 2, 4, 1}, 4, 1), std::nullopt);
  EXPECT_EQ(first_last_of(Blocks{2, 5, 5, 3, 2, 5, 4, 4}, 4, 2), std::nullopt);
  EXPECT_EQ(first_last_of(Blocks{2, 3, 3}, 4, 1), std::nullopt);  // not pp x vpp stages
}

TEST(FirstLastStages, MegatronsRulesAreRefusedByName) {
  // 61 - 2 - 4 = 55 over 14 middle ranks.
  EXPECT_NE(error_of(61, 16, 1, {2, 4}).find("do not split evenly over the 14 middle"), std::string::npos);
  EXPECT_NE(error_of(61, 16, 1, {0, 3}).find("--decoder-first-pipeline-num-layers (0) must be > 0"),
            std::string::npos);
  // With 2 virtual stages per rank every count must be even.
  EXPECT_NE(error_of(30, 4, 2, {3, 7}).find("(3) must be divisible by the virtual stages"), std::string::npos);
  // 30 - 4 - 6 = 20, 10 per middle rank, not divisible by 4 chunks.
  // 30 - 4 - 8 = 18, 9 per middle rank: not a multiple of 4 chunks.
  EXPECT_NE(error_of(30, 4, 4, {4, 8}).find("each middle pipeline rank's 9 layers must be divisible"),
            std::string::npos);
  // pp 2 with both given: nothing may be left over, and there must be something in between
  // when there are middle ranks.
  EXPECT_NE(error_of(61, 2, 1, {30, 30}).find("leave 1 layers for 0 middle"), std::string::npos);
  EXPECT_NE(error_of(8, 3, 1, {4, 4}).find("leave 0 layers for 1 middle"), std::string::npos);
  EXPECT_NE(error_of(8, 1, 1, {4, std::nullopt}).find("pipeline parallel size > 1"), std::string::npos);
  EXPECT_NE(error_of(8, 4, 1, {9, std::nullopt}).find("exceeds --num-layers (8)"), std::string::npos);
  EXPECT_NE(error_of(8, 4, 1, {5, 5}).find("exceed --num-layers (8)"), std::string::npos);
  EXPECT_NE(error_of(8, 4, 1, {}).find("neither"), std::string::npos);
  EXPECT_EQ(error_of(8, 4, 1, {2, 2}), "no error");
}

}  // namespace
}  // namespace strata::planner
