// Single-rank model: gradients against central finite differences in float64 (the
// whole GPT and Llama, every parameter tensor), recompute modes bitwise equal, the
// float model against the double one, and a model split into two chunks (as a pipeline
// would run it) equal to the whole model.
#include "runtime/model_chunk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model_test_util.h"

namespace strata::runtime {
namespace {

using testing::TestModel;

struct Case {
  const char* name;
  models::ModelSpec spec;
  planner::Recompute recompute;
};

void check_finite_differences(const models::ModelSpec& spec, planner::Recompute recompute) {
  const std::int64_t batch = 2;
  ModelDims d = make_model_dims(spec, batch, 1, 0, false, recompute);
  TestModel<double> m(d, testing::whole_model(static_cast<int>(spec.layers)), 1234, 0.3);
  const auto tokens = testing::random_tokens(d.rows(), static_cast<int>(d.vocab), 1);
  const auto targets = testing::random_tokens(d.rows(), static_cast<int>(d.vocab), 2);
  const double w = 1.0 / static_cast<double>(d.rows());
  const double loss = m.loss_and_grads(tokens, targets, w);
  ASSERT_TRUE(std::isfinite(loss));
  ASSERT_GT(loss, 0.5);
  const std::vector<double> grads = m.store.grads();

  const double eps = 1e-5;
  int checked = 0;
  for (const auto& e : m.store.entries()) {
    // a handful of elements spread over the tensor (first, last and in between)
    std::vector<std::size_t> idx;
    const std::size_t k = std::min<std::size_t>(e.numel, 7);
    for (std::size_t i = 0; i < k; ++i) idx.push_back(i * (e.numel - 1) / std::max<std::size_t>(1, k - 1));
    double max_abs_grad = 0;
    for (std::size_t i = 0; i < e.numel; ++i) max_abs_grad = std::max(max_abs_grad, std::abs(grads[e.offset + i]));
    EXPECT_GT(max_abs_grad, 1e-6) << e.spec.name << " has an all-zero gradient";
    for (std::size_t i : idx) {
      double& p = m.store.params()[e.offset + i];
      const double saved = p;
      p = saved + eps;
      const double up = m.loss_only(tokens, targets, w);
      p = saved - eps;
      const double down = m.loss_only(tokens, targets, w);
      p = saved;
      const double numeric = (up - down) / (2 * eps);
      const double analytic = grads[e.offset + i];
      EXPECT_NEAR(analytic, numeric, 1e-8 + 1e-6 * std::abs(numeric))
          << e.spec.name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 30);
}

TEST(ModelChunk, GptGradientsMatchFiniteDifferences) {
  check_finite_differences(testing::small_gpt(), planner::Recompute::None);
}

TEST(ModelChunk, LlamaGradientsMatchFiniteDifferences) {
  check_finite_differences(testing::small_llama(), planner::Recompute::None);
}

TEST(ModelChunk, UntiedGptAndTiedLlamaGradientsMatchFiniteDifferences) {
  auto gpt = testing::small_gpt();
  gpt.tied_embeddings = false;
  check_finite_differences(gpt, planner::Recompute::None);
  auto llama = testing::small_llama();
  llama.tied_embeddings = true;
  check_finite_differences(llama, planner::Recompute::None);
}

TEST(ModelChunk, RecomputeModesGiveBitwiseEqualLossAndGradients) {
  for (const auto& spec : {testing::small_gpt(), testing::small_llama()}) {
    std::vector<float> ref_grads;
    double ref_loss = 0;
    for (auto mode : {planner::Recompute::None, planner::Recompute::Selective, planner::Recompute::Full}) {
      ModelDims d = make_model_dims(spec, 2, 1, 0, false, mode);
      TestModel<float> m(d, testing::whole_model(static_cast<int>(spec.layers)), 99, 0.2);
      const auto tokens = testing::random_tokens(d.rows(), static_cast<int>(d.vocab), 3);
      const auto targets = testing::random_tokens(d.rows(), static_cast<int>(d.vocab), 4);
      const double loss = m.loss_and_grads(tokens, targets, 1.0f / static_cast<float>(d.rows()));
      if (mode == planner::Recompute::None) {
        ref_loss = loss;
        ref_grads = m.store.grads();
      } else {
        EXPECT_EQ(loss, ref_loss) << spec.name << " " << planner::to_string(mode);
        EXPECT_TRUE(m.store.grads() == ref_grads) << spec.name << " " << planner::to_string(mode);
      }
    }
  }
}

TEST(ModelChunk, FloatModelMatchesDoubleModel) {
  for (const auto& spec : {testing::small_gpt(), testing::small_llama()}) {
    ModelDims d = make_model_dims(spec, 2, 1, 0, false, planner::Recompute::None);
    const auto layout = testing::whole_model(static_cast<int>(spec.layers));
    TestModel<double> md(d, layout, 5, 0.2);
    TestModel<float> mf(d, layout, 5, 0.2);
    const auto tokens = testing::random_tokens(d.rows(), static_cast<int>(d.vocab), 5);
    const auto targets = testing::random_tokens(d.rows(), static_cast<int>(d.vocab), 6);
    const double ld = md.loss_and_grads(tokens, targets, 1.0 / static_cast<double>(d.rows()));
    const double lf = mf.loss_and_grads(tokens, targets, 1.0f / static_cast<float>(d.rows()));
    EXPECT_NEAR(lf, ld, 1e-5 * ld) << spec.name;
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < md.store.size(); ++i) {
      const double g = md.store.grads()[i];
      diff += (mf.store.grads()[i] - g) * (mf.store.grads()[i] - g);
      norm += g * g;
    }
    EXPECT_LT(std::sqrt(diff / norm), 1e-4) << spec.name;
  }
}

TEST(ModelChunk, TwoChunksEqualTheWholeModel) {
  for (const auto& spec : {testing::small_gpt(), testing::small_llama()}) {
    ModelDims d = make_model_dims(spec, 2, 1, 0, false, planner::Recompute::None);
    const auto tokens = testing::random_tokens(d.rows(), static_cast<int>(d.vocab), 7);
    const auto targets = testing::random_tokens(d.rows(), static_cast<int>(d.vocab), 8);
    const double w = 1.0 / static_cast<double>(d.rows());
    TestModel<double> whole(d, testing::whole_model(2), 11, 0.2);
    const double loss = whole.loss_and_grads(tokens, targets, w);

    // stage 0: embedding + block 0; stage 1: block 1 + head (each with its own store,
    // as two pipeline ranks would hold them; tied embeddings get a copy on stage 1)
    ChunkLayout first = chunk_layout({0, 1}, 2), second = chunk_layout({2, 3}, 2);
    TestModel<double> s0(d, first, 11, 0.2), s1(d, second, 11, 0.2);
    ChunkActivations<double> a0, a1;
    std::vector<double> act(s0.chunk->activation_size()), grad(act.size());
    s0.chunk->forward(a0, tokens.data(), nullptr, nullptr, act.data(), w);
    const double split_loss = s1.chunk->forward(a1, nullptr, targets.data(), act.data(), nullptr, w);
    s1.chunk->backward(a1, nullptr, grad.data());
    s0.chunk->backward(a0, grad.data(), nullptr);
    EXPECT_NEAR(split_loss, loss, 1e-12);
    for (const auto* part : {&s0, &s1})
      for (const auto& e : part->store.entries()) {
        const auto& we = whole.store.entry(e.spec.name);
        for (std::size_t i = 0; i < e.numel; ++i) {
          double g = part->store.grads()[e.offset + i];
          // the tied embedding's gradient is split over the two stages: add the other copy
          if (e.spec.name == "embedding.wte" && spec.tied_embeddings) {
            const auto* other = part == &s0 ? &s1 : &s0;
            g += other->store.grads()[other->store.entry(e.spec.name).offset + i];
          }
          EXPECT_NEAR(g, whole.store.grads()[we.offset + i], 1e-12) << e.spec.name << "[" << i << "]";
        }
      }
  }
}

}  // namespace
}  // namespace strata::runtime
