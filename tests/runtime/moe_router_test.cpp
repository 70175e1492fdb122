// Top-k routing with renormalised weights, checked by hand on three tokens, and its
// backward against central finite differences.
#include "runtime/moe_router.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace strata::runtime {
namespace {

using models::RouterKind;

// Three tokens, four experts, top-2.
//   token 0: logits (1, 2, 0, 3): experts 3 then 1; softmax over (3, 2) = (e, 1) / (e + 1)
//   token 1: all equal: ties go to the lower index, experts 0 and 1, weights 1/2 each
//   token 2: (ln 3, 0, -5, 0): expert 0, then 1 (tie with 3); weights (3, 1) / 4
const std::vector<double> kLogits = {1, 2, 0, 3, 0, 0, 0, 0, std::log(3.0), 0, -5, 0};

TEST(MoeRouter, SoftmaxTopTwoRenormalisedByHand) {
  const Routing<double> r = route_tokens(RouterKind::Softmax, kLogits.data(), 3, 4, 2);
  ASSERT_EQ(r.expert.size(), 6u);
  EXPECT_EQ(r.expert, (std::vector<std::int32_t>{3, 1, 0, 1, 0, 1}));
  const double e = std::exp(1.0);
  const std::vector<double> want = {e / (e + 1), 1 / (e + 1), 0.5, 0.5, 0.75, 0.25};
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(r.weight[i], want[i], 1e-12) << i;
}

TEST(MoeRouter, SigmoidTopTwoRenormalisedByHand) {
  const Routing<double> r = route_tokens(RouterKind::Sigmoid, kLogits.data(), 3, 4, 2);
  EXPECT_EQ(r.expert, (std::vector<std::int32_t>{3, 1, 0, 1, 0, 1}));
  // token 0: sigmoid(3) = 0.9525741268, sigmoid(2) = 0.8807970780, over their sum
  EXPECT_NEAR(r.weight[0], 0.9525741268224334 / (0.9525741268224334 + 0.8807970779778823), 1e-12);
  EXPECT_NEAR(r.weight[1], 0.8807970779778823 / (0.9525741268224334 + 0.8807970779778823), 1e-12);
  EXPECT_NEAR(r.weight[2], 0.5, 1e-12);
  // token 2: sigmoid(ln 3) = 3/4, sigmoid(0) = 1/2: (3/4, 1/2) / (5/4) = (0.6, 0.4)
  EXPECT_NEAR(r.weight[4], 0.6, 1e-12);
  EXPECT_NEAR(r.weight[5], 0.4, 1e-12);
}

TEST(MoeRouter, TopOneHasWeightOne) {
  const Routing<double> r = route_tokens(RouterKind::Softmax, kLogits.data(), 3, 4, 1);
  EXPECT_EQ(r.expert, (std::vector<std::int32_t>{3, 0, 0}));
  for (double w : r.weight) EXPECT_DOUBLE_EQ(w, 1.0);
}

// L = sum_i g_i w_i for fixed g: dL/dlogits from route_tokens_backward against central
// differences (logits without ties, so a small step keeps the selection).
void expect_backward_matches(RouterKind kind) {
  const std::vector<double> logits = {0.3, -1.2, 0.9, 0.1, 1.5, 0.2, -0.4, 0.7, -0.6, 0.45, 1.1, -2.0};
  const std::vector<double> g = {0.7, -1.3, 0.25, 2.0, -0.5, 0.9};
  auto loss = [&](const std::vector<double>& z) {
    const Routing<double> r = route_tokens(kind, z.data(), 3, 4, 2);
    double l = 0;
    for (std::size_t i = 0; i < g.size(); ++i) l += g[i] * r.weight[i];
    return l;
  };
  const Routing<double> r = route_tokens(kind, logits.data(), 3, 4, 2);
  std::vector<double> dz(12);
  route_tokens_backward(kind, dz.data(), g.data(), logits.data(), r, 4);
  const double h = 1e-6;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    auto up = logits, dn = logits;
    up[i] += h;
    dn[i] -= h;
    EXPECT_NEAR(dz[i], (loss(up) - loss(dn)) / (2 * h), 1e-8) << to_string(kind) << " logit " << i;
  }
}

TEST(MoeRouter, SoftmaxBackwardMatchesFiniteDifferences) { expect_backward_matches(RouterKind::Softmax); }
TEST(MoeRouter, SigmoidBackwardMatchesFiniteDifferences) { expect_backward_matches(RouterKind::Sigmoid); }

}  // namespace
}  // namespace strata::runtime
