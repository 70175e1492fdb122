// Layout-independent initialization: the TP shards of every parameter, put back together,
// are exactly the one-rank tensor, for any tp; vocabulary shards cover the vocabulary once.
#include "runtime/param_spec.h"

#include <gtest/gtest.h>
#include <string>

#include "model_test_util.h"
#include "models/model_stats.h"
#include "runtime/model_chunk.h"

namespace strata::runtime {
namespace {

TEST(ParamSpec, ShardsOfEveryParameterReassembleTheOneRankTensor) {
  for (auto spec : {testing::small_gpt(), testing::small_llama()}) {
    spec.vocab = 300;
    const auto layout = testing::whole_model(static_cast<int>(spec.layers));
    ModelDims d1 = make_model_dims(spec, 1, 1, 0, false, planner::Recompute::None);
    const auto full_specs = ModelChunk<float>::param_specs(d1, layout);
    for (int tp : {2}) {
      std::vector<std::vector<ParamSpec>> shards;
      for (int r = 0; r < tp; ++r)
        shards.push_back(ModelChunk<float>::param_specs(make_model_dims(spec, 1, tp, r, true, planner::Recompute::None), layout));
      for (std::size_t p = 0; p < full_specs.size(); ++p) {
        const ParamSpec& f = full_specs[p];
        std::vector<float> full(static_cast<std::size_t>(f.local_numel()));
        init_param(f, 42, full.data());
        std::vector<int> covered(full.size(), 0);
        for (int r = 0; r < tp; ++r) {
          const ParamSpec& s = shards[static_cast<std::size_t>(r)][p];
          ASSERT_EQ(s.name, f.name);
          std::vector<float> local(static_cast<std::size_t>(s.local_numel()));
          init_param(s, 42, local.data());
          auto ranges = s.row_ranges;
          if (ranges.empty()) ranges.emplace_back(0, s.rows);
          std::size_t i = 0;
          for (const auto& [b, n] : ranges)
            for (std::int64_t row = b; row < b + n; ++row)
              for (std::int64_t c = s.col_begin; c < s.col_begin + s.local_cols(); ++c) {
                const auto at = static_cast<std::size_t>(row * f.cols + c);
                EXPECT_EQ(local[i++], full[at]) << f.name;
                covered[at] += 1;
              }
        }
        for (std::size_t i = 0; i < covered.size(); ++i) {
          const int want = shards[0][p].tp_sharded ? 1 : tp;  // shards once, replicas everywhere
          ASSERT_EQ(covered[i], want) << f.name << "[" << i << "]";
        }
      }
    }
  }
}

TEST(ParamSpec, InitDependsOnSeedAndNameOnly) {
  ParamSpec a;
  a.name = "x";
  a.rows = 4;
  a.cols = 4;
  std::vector<double> x(16), y(16), z(16);
  init_param(a, 1, x.data());
  init_param(a, 1, y.data());
  EXPECT_EQ(x, y);
  a.name = "y";
  init_param(a, 1, z.data());
  EXPECT_NE(x, z);
  double mean = 0;
  ParamSpec big;
  big.name = "big";
  big.rows = 1000;
  big.cols = 100;
  big.init_std = 0.02;
  std::vector<double> v(100000);
  init_param(big, 3, v.data());
  double var = 0;
  for (double t : v) mean += t;
  mean /= 1e5;
  for (double t : v) var += (t - mean) * (t - mean);
  EXPECT_NEAR(mean, 0.0, 0.001);
  EXPECT_NEAR(std::sqrt(var / 1e5), 0.02, 0.0005);
}

TEST(ModelDims, VocabularyShardsFollowMegatronPadding) {
  auto spec = testing::small_gpt();
  spec.vocab = 300;  // padded to 512 for tp 2 (multiple of 128 * 2): 256 + 44 rows
  auto d0 = make_model_dims(spec, 1, 2, 0, false, planner::Recompute::None);
  auto d1 = make_model_dims(spec, 1, 2, 1, false, planner::Recompute::None);
  EXPECT_EQ(d0.vocab_begin, 0);
  EXPECT_EQ(d0.vocab_local, 256);
  EXPECT_EQ(d1.vocab_begin, 256);
  EXPECT_EQ(d1.vocab_local, 44);
  spec.vocab = 256;  // tp 4: padded to 512, 128 per rank: ranks 2 and 3 hold nothing
  auto d3 = make_model_dims(spec, 1, 4, 3, false, planner::Recompute::None);
  EXPECT_EQ(d3.vocab_local, 0);
}

TEST(ModelDims, RejectsSplitsThatDoNotDivide) {
  auto spec = testing::small_llama();  // kv_heads 2
  EXPECT_THROW(make_model_dims(spec, 1, 4, 0, false, planner::Recompute::None), InputError);
  spec = testing::small_gpt();
  spec.seq_len = 5;
  EXPECT_THROW(make_model_dims(spec, 1, 2, 0, true, planner::Recompute::None), InputError);
}

}  // namespace
}  // namespace strata::runtime

namespace strata::runtime {
namespace {

// Dense and MoE blocks alternating (moe.layer_step 2): blocks 2 and 4 (1-based) build the
// MoE MLP, 1 and 3 the dense one of model.ffn; the blocks' parameters are the cost model's.
TEST(ModelDims, InterleavedMoeBlocksBuildTheirOwnMlp) {
  models::ModelSpec m = testing::small_moe();
  m.layers = 4;
  m.moe->first_dense_layers = 0;
  m.moe->layer_step = 2;
  models::validate(m, "test");
  const ModelDims d = make_model_dims(m, 1, 1, 0, false, planner::Recompute::None);
  EXPECT_FALSE(d.moe_block(0));
  EXPECT_TRUE(d.moe_block(1));
  EXPECT_FALSE(d.moe_block(2));
  EXPECT_TRUE(d.moe_block(3));
  const auto specs = ModelChunk<double>::param_specs(d, testing::whole_model(4));
  std::vector<double> block(4, 0.0);
  int expert_tensors_in_dense_blocks = 0;
  for (const ParamSpec& s : specs) {
    if (s.name.rfind("blocks.", 0) != 0) continue;
    const int b = std::stoi(s.name.substr(7));
    block[static_cast<std::size_t>(b)] += static_cast<double>(s.rows * s.cols);
    if (s.expert && b % 2 == 0) ++expert_tensors_in_dense_blocks;
  }
  EXPECT_EQ(expert_tensors_in_dense_blocks, 0);
  for (int b = 0; b < 4; ++b) EXPECT_EQ(block[static_cast<std::size_t>(b)], models::layer_params(m, b + 1)) << b;
  EXPECT_GT(block[1], block[0]);
}

}  // namespace
}  // namespace strata::runtime
