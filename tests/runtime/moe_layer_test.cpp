// The MoE MLP on one rank in float64: every gradient (input, router, routed and shared
// experts) against central finite differences; which experts a rank holds; the
// refusals of what the runtime does not build.
#include "runtime/moe_layer.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "common/errors.h"
#include "tests/runtime/model_test_util.h"

namespace strata::runtime {
namespace {

using testing::small_moe;

ModelDims moe_dims(int ep = 1, int ep_rank = 0, models::RouterKind router = models::RouterKind::Softmax,
                   double capacity_factor = 0) {
  models::ModelSpec m = small_moe();
  m.moe->router = router;
  m.moe->capacity_factor = capacity_factor;
  return make_model_dims(m, 2, 1, 0, false, planner::Recompute::None, 1, 0, ep, ep_rank);
}

void expect_gradients_match_finite_differences(models::RouterKind router, double capacity_factor = 0) {
  SCOPED_TRACE(models::to_string(router));
  const ModelDims d = moe_dims(1, 0, router, capacity_factor);
  ParameterStore<double> store, experts;
  for (const auto& s : MoeLayer<double>::param_specs(d, 1)) (s.expert ? experts : store).add(s);
  store.finalize();
  experts.finalize();
  // weights of order 0.3 so that routing and SwiGLU are far from linear
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-0.3, 0.3);
  for (auto& v : store.params()) v = u(rng);
  for (auto& v : experts.params()) v = u(rng);
  const MoeLayer<double> layer(d, 1, store, experts, TpGroup{}, EpGroup{});
  const std::size_t n = d.local_rows() * d.hidden;
  std::vector<double> x(n), g(n);
  for (auto& v : x) v = 3 * u(rng);
  for (auto& v : g) v = u(rng);
  auto loss = [&]() {
    MoeActivations<double> a;
    std::vector<double> out(n);
    layer.forward(out.data(), x.data(), a);
    double l = 0;
    for (std::size_t i = 0; i < n; ++i) l += g[i] * out[i];
    return l;
  };
  MoeActivations<double> a;
  std::vector<double> out(n), dx(n);
  layer.forward(out.data(), x.data(), a);
  // every token uses 2 of the 4 experts
  ASSERT_EQ(a.routing.expert.size(), 2 * d.local_rows());
  // with a capacity factor below 1 the experts' total capacity is under 2 x tokens: slots drop
  if (capacity_factor > 0) { EXPECT_LT(a.plan.rows_sent(), a.routing.expert.size()); }
  layer.backward(dx.data(), g.data(), x.data(), a);
  const double h = 1e-6;
  int checked = 0;
  auto check = [&](double* v, const double* grad, std::size_t count, const std::string& what) {
    for (std::size_t i = 0; i < count; ++i) {
      const double keep = v[i];
      v[i] = keep + h;
      const double lp = loss();
      v[i] = keep - h;
      const double lm = loss();
      v[i] = keep;
      EXPECT_NEAR(grad[i], (lp - lm) / (2 * h), 1e-7 * (1 + std::abs(grad[i]))) << what << " " << i;
      ++checked;
    }
  };
  check(x.data(), dx.data(), n, "x");
  for (const auto& e : store.entries())
    check(store.params().data() + e.offset, store.grads().data() + e.offset, e.numel, e.spec.name);
  for (const auto& e : experts.entries())
    check(experts.params().data() + e.offset, experts.grads().data() + e.offset, e.numel, e.spec.name);
  EXPECT_GT(checked, 2000);
}

TEST(MoeLayer, GradientsMatchFiniteDifferences) {
  expect_gradients_match_finite_differences(models::RouterKind::Softmax);
}

TEST(MoeLayer, SigmoidRouterGradientsMatchFiniteDifferences) {
  expect_gradients_match_finite_differences(models::RouterKind::Sigmoid);
}

TEST(MoeLayer, TokenDroppingGradientsMatchFiniteDifferences) {
  // capacity 0.5: ceil(tokens * 2 / 4 * 0.5) = tokens / 4 slots per expert, half the
  // tokens' slots are dropped; the kept ones still differentiate through the router.
  expect_gradients_match_finite_differences(models::RouterKind::Softmax, 0.5);
}

TEST(MoeLayer, ExpertParallelRankHoldsItsShareOfTheExperts) {
  std::vector<std::string> routed, other;
  for (const auto& s : MoeLayer<float>::param_specs(moe_dims(2, 1), 1))
    (s.expert ? routed : other).push_back(s.name);
  EXPECT_EQ(routed, (std::vector<std::string>{
                        "blocks.1.moe.experts.2.gate.weight", "blocks.1.moe.experts.2.up.weight",
                        "blocks.1.moe.experts.2.down.weight", "blocks.1.moe.experts.3.gate.weight",
                        "blocks.1.moe.experts.3.up.weight", "blocks.1.moe.experts.3.down.weight"}));
  EXPECT_EQ(other, (std::vector<std::string>{"blocks.1.moe.router.weight", "blocks.1.moe.shared.gate.weight",
                                             "blocks.1.moe.shared.up.weight", "blocks.1.moe.shared.down.weight"}));
}

TEST(MoeLayer, FirstDenseLayersKeepTheDenseMlp) {
  const ModelDims d = moe_dims();
  EXPECT_FALSE(d.moe_block(0));
  EXPECT_TRUE(d.moe_block(1));
  bool dense_mlp = false;
  for (const auto& s : TransformerBlock<float>::param_specs(d, 0)) dense_mlp |= s.name == "blocks.0.mlp.down.weight";
  EXPECT_TRUE(dense_mlp);
  for (const auto& s : TransformerBlock<float>::param_specs(d, 1)) EXPECT_EQ(s.name.find(".mlp."), std::string::npos) << s.name;
}

std::string refusal(const models::ModelSpec& m, int tp, bool sp, int ep) {
  try {
    make_model_dims(m, 2, tp, 0, sp, planner::Recompute::None, 1, 0, ep, 0);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(MoeLayer, RefusesWhatTheRuntimeDoesNotBuildByName) {
  models::ModelSpec m = small_moe();
  m.moe->capacity_factor = 1.25;
  EXPECT_EQ(refusal(m, 1, false, 1), "");  // token dropping is built (expert_capacity.h)
  EXPECT_NE(refusal(small_moe(), 2, false, 1).find("sequence_parallel"), std::string::npos);
  EXPECT_NE(refusal(small_moe(), 1, false, 3).find("strategy.ep (3) must divide model.moe.experts (4)"),
            std::string::npos);
  EXPECT_NE(refusal(testing::small_llama(), 1, false, 2).find("needs a mixture-of-experts model"), std::string::npos);
  EXPECT_EQ(refusal(small_moe(), 2, true, 2), "");
  models::ModelSpec qk = testing::small_llama();  // Qwen3's per-head Q and K norms are not built
  qk.qk_norm = true;
  EXPECT_NE(refusal(qk, 1, false, 1).find("model.qk_norm"), std::string::npos);
}

}  // namespace
}  // namespace strata::runtime
