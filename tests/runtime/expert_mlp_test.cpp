// One routed expert (SwiGLU MLP): a forward by hand and the backward against central
// finite differences in float64.
#include "runtime/expert_mlp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace strata::runtime {
namespace {

TEST(ExpertMlp, ForwardByHand) {
  // C = 1, F = 1: y = wd * silu(wg x) * (wu x); x = 2, wg = 0.5, wu = 3, wd = -1:
  // silu(1) = 1 / (1 + e^-1) = 0.7310585786, times 6, times -1.
  const double wg = 0.5, wu = 3, wd = -1, x = 2;
  ExpertMlp<double> m;
  m.gate = &wg;
  m.up = &wu;
  m.down = &wd;
  m.hidden = m.ffn = 1;
  double y = 0, h = 0, u = 0, a = 0;
  m.forward(&y, &x, 1, &h, &u, &a);
  EXPECT_NEAR(y, -6 * 0.7310585786300049, 1e-12);
}

TEST(ExpertMlp, BackwardMatchesFiniteDifferences) {
  const std::size_t C = 3, F = 2, R = 4;
  std::vector<double> gate = {0.4, -0.7, 0.2, 0.9, 0.1, -0.5};
  std::vector<double> up = {-0.3, 0.8, 0.6, -0.2, 0.5, 0.3};
  std::vector<double> down = {0.7, -0.4, 0.2, 0.9, -0.6, 0.1};
  std::vector<double> x = {1.0, -0.5, 0.3, 0.2, 0.8, -1.1, -0.7, 0.4, 0.9, 0.6, -0.2, -0.3};
  const std::vector<double> g = {0.5, -1.0, 0.25, 0.3, 0.7, -0.2, -0.9, 0.1, 0.4, 0.6, -0.3, 0.8};
  std::vector<double> dgate(6, 0), dup(6, 0), ddown(6, 0);
  ExpertMlp<double> m{gate.data(), up.data(), down.data(), dgate.data(), dup.data(), ddown.data(), C, F};
  auto loss = [&]() {  // L = sum g * y
    std::vector<double> y(R * C), h(R * F), u(R * F), a(R * F);
    m.forward(y.data(), x.data(), R, h.data(), u.data(), a.data());
    double l = 0;
    for (std::size_t i = 0; i < y.size(); ++i) l += g[i] * y[i];
    return l;
  };
  std::vector<double> y(R * C), h(R * F), u(R * F), a(R * F), dx(R * C);
  m.forward(y.data(), x.data(), R, h.data(), u.data(), a.data());
  m.backward(dx.data(), g.data(), x.data(), h.data(), u.data(), a.data(), R);
  const double step = 1e-6;
  auto check = [&](std::vector<double>& v, const std::vector<double>& grad, const char* what) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      const double keep = v[i];
      v[i] = keep + step;
      const double lp = loss();
      v[i] = keep - step;
      const double lm = loss();
      v[i] = keep;
      EXPECT_NEAR(grad[i], (lp - lm) / (2 * step), 1e-8) << what << " " << i;
    }
  };
  check(x, dx, "x");
  check(gate, dgate, "gate");
  check(up, dup, "up");
  check(down, ddown, "down");
}

}  // namespace
}  // namespace strata::runtime
