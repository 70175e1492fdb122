// AdamW against a hand-written double-precision reference; the DP optimizer on thread-
// ranks: zero 0 and zero 1 both equal one rank that saw the summed gradient, and weight
// decay touches only the parameters marked for it.
#include "runtime/distributed_optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "thread_communicator.h"

namespace strata::runtime {
namespace {

TEST(AdamW, MatchesTheFormulaOverSeveralSteps) {
  AdamWConfig cfg;
  cfg.lr = 0.01;
  cfg.weight_decay = 0.1;
  std::vector<float> p = {0.5f, -1.0f, 2.0f}, m(3, 0.0f), v(3, 0.0f);
  std::vector<double> rp = {0.5, -1.0, 2.0}, rm(3, 0.0), rv(3, 0.0);
  for (int t = 1; t <= 5; ++t) {
    const std::vector<float> g = {0.1f * static_cast<float>(t), -0.2f, 0.0f};
    adamw_update(p.data(), g.data(), m.data(), v.data(), 3, cfg, t, true, 0.5f);
    for (int i = 0; i < 3; ++i) {
      const double gi = 0.5 * g[static_cast<std::size_t>(i)];
      rm[i] = 0.9 * rm[i] + 0.1 * gi;
      rv[i] = 0.95 * rv[i] + 0.05 * gi * gi;
      const double mh = rm[i] / (1 - std::pow(0.9, t)), vh = rv[i] / (1 - std::pow(0.95, t));
      rp[i] -= 0.01 * (mh / (std::sqrt(vh) + 1e-8) + 0.1 * rp[i]);
    }
  }
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(p[static_cast<std::size_t>(i)], rp[static_cast<std::size_t>(i)], 1e-6);
  // zero gradient: only decay moved the third parameter
  EXPECT_NEAR(p[2], 2.0 * std::pow(1 - 0.01 * 0.1, 5), 1e-6);
}

ParameterStore<float> make_store(std::size_t pad) {
  ParameterStore<float> s;
  ParamSpec a;
  a.name = "w";
  a.rows = 5;
  a.cols = 3;
  a.weight_decay = true;
  ParamSpec b;
  b.name = "b";
  b.rows = 4;
  b.init = ParamInit::Zeros;
  s.add(a);
  s.add(b);
  s.finalize(pad);
  s.init(9);
  return s;
}

// gradient of rank r: deterministic values
void fill_grads(ParameterStore<float>& s, int rank) {
  for (std::size_t i = 0; i < s.size(); ++i)
    s.grads()[i] = 0.01f * static_cast<float>((static_cast<int>(i) * 7 + rank * 3) % 11) - 0.05f;
}

TEST(DistributedOptimizer, ZeroStagesMatchOneRankWithSummedGradients) {
  AdamWConfig cfg;
  cfg.lr = 0.05;
  // reference: one rank, gradient = sum over 3 ranks
  ParameterStore<float> ref = make_store(1);
  DistributedOptimizer ref_opt(ref, nullptr, 0, cfg);
  for (int step = 1; step <= 3; ++step) {
    std::vector<float> sum(ref.size(), 0.0f);
    for (int r = 0; r < 3; ++r) {
      fill_grads(ref, r + step);
      for (std::size_t i = 0; i < ref.size(); ++i) sum[i] += ref.grads()[i];
    }
    std::copy(sum.begin(), sum.end(), ref.grads().begin());
    ref_opt.reduce_gradients();
    ref_opt.step(step, 1.0f);
  }
  for (int zero : {0, 1}) {
    testing::ThreadGroup g(3);
    std::vector<std::vector<float>> params(3);
    std::vector<std::thread> th;
    for (int r = 0; r < 3; ++r)
      th.emplace_back([&, r] {
        testing::ThreadCommunicator comm(g, r);
        ParameterStore<float> s = make_store(zero == 1 ? 3 : 1);
        DistributedOptimizer opt(s, &comm, zero, cfg, /*bucket_floats=*/4);
        if (zero == 1) EXPECT_EQ(opt.exp_avg().size(), s.padded_size() / 3);
        for (int step = 1; step <= 3; ++step) {
          fill_grads(s, r + step);
          opt.reduce_gradients();
          opt.step(step, 1.0f);
        }
        params[static_cast<std::size_t>(r)] = std::vector<float>(s.params().begin(), s.params().begin() + static_cast<std::ptrdiff_t>(s.size()));
      });
    for (auto& t : th) t.join();
    for (int r = 0; r < 3; ++r)
      for (std::size_t i = 0; i < ref.size(); ++i)
        EXPECT_NEAR(params[static_cast<std::size_t>(r)][i], ref.params()[i], 1e-6) << "zero " << zero << " rank " << r << " [" << i << "]";
  }
}

}  // namespace
}  // namespace strata::runtime
