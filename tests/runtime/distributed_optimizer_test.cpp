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
  for (int zero : {0, 1, 2, 3}) {
    testing::ThreadGroup g(3);
    std::vector<std::vector<float>> params(3);
    std::vector<std::thread> th;
    for (int r = 0; r < 3; ++r)
      th.emplace_back([&, r] {
        testing::ThreadCommunicator comm(g, r);
        ParameterStore<float> s = make_store(zero >= 1 ? 3 : 1);
        GradReduction red;
        red.bucket_floats = 4;
        DistributedOptimizer opt(s, &comm, zero, cfg, red);
        if (zero >= 1) EXPECT_EQ(opt.exp_avg().size(), s.padded_size() / 3);
        opt.release_all_params();  // zero 3: only the owned shard stays
        // true when this rank holds values outside its shard and all of them are NaN
        auto unowned_all_nan = [&](const std::vector<float>& buf) {
          std::size_t unowned = 0;
          for (std::size_t i = 0; i < s.size(); ++i)
            if (i < opt.owned_begin() || i >= opt.owned_end()) {
              ++unowned;
              if (!std::isnan(buf[i])) return false;
            }
          return unowned > 0;
        };
        std::vector<ParamSpec> all;
        for (const auto& e : s.entries()) all.push_back(e.spec);
        for (int step = 1; step <= 3; ++step) {
          fill_grads(s, r + step);
          opt.reduce_gradients();
          // zero 2 and 3 release the gradients of other ranks' shards after the reduction
          EXPECT_EQ(unowned_all_nan(s.grads()), zero >= 2) << "zero " << zero << " step " << step;
          opt.step(step, 1.0f);
          EXPECT_EQ(unowned_all_nan(s.params()), zero == 3) << "zero " << zero << " step " << step;
        }
        opt.gather_params(all);  // zero 3: every value back; a no-op otherwise
        params[static_cast<std::size_t>(r)] = std::vector<float>(s.params().begin(), s.params().begin() + static_cast<std::ptrdiff_t>(s.size()));
      });
    for (auto& t : th) t.join();
    for (int r = 0; r < 3; ++r)
      for (std::size_t i = 0; i < ref.size(); ++i)
        EXPECT_NEAR(params[static_cast<std::size_t>(r)][i], ref.params()[i], 1e-6) << "zero " << zero << " rank " << r << " [" << i << "]";
  }
}

// Five parameters, buckets of >= 8 values from the end: {e, d, c} = [10, 20), then "b"
// alone when held back, then {a} (else {b, a}).
ParameterStore<float> make_bucket_store(std::size_t pad) {
  ParameterStore<float> s;
  for (auto [name, n] : std::vector<std::pair<const char*, int>>{{"a", 6}, {"b", 4}, {"c", 5}, {"d", 3}, {"e", 2}}) {
    ParamSpec p;
    p.name = name;
    p.rows = n;
    s.add(p);
  }
  s.finalize(pad);
  return s;
}

float local_grad(std::size_t i, int rank) { return static_cast<float>(i) + 100.0f * static_cast<float>(rank + 1); }
float summed_grad(std::size_t i) { return 2.0f * static_cast<float>(i) + 300.0f; }  // ranks 0 and 1

TEST(DistributedOptimizer, BucketStartsWhenItsLastGradientIsReadyAndHeldBackWaits) {
  for (int zero : {0, 1}) {
    testing::ThreadGroup g(2);
    std::vector<std::thread> th;
    for (int r = 0; r < 2; ++r)
      th.emplace_back([&, r] {
        testing::ThreadCommunicator comm(g, r);
        ParameterStore<float> s = make_bucket_store(zero == 1 ? 2 : 1);
        GradReduction red;
        red.bucket_floats = 8;
        red.held_back = {"b"};
        DistributedOptimizer opt(s, &comm, zero, AdamWConfig{}, red);
        EXPECT_EQ(opt.bucket_count(), 3u);
        for (std::size_t i = 0; i < s.size(); ++i) s.grads()[i] = local_grad(i, r);
        auto is_local = [&](std::size_t lo, std::size_t hi) {
          for (std::size_t i = lo; i < hi; ++i)
            if (s.grads()[i] != local_grad(i, r)) return false;
          return true;
        };
        auto is_summed = [&](std::size_t lo, std::size_t hi) {
          for (std::size_t i = std::max(lo, opt.owned_begin()); i < std::min(hi, opt.owned_end()); ++i)
            if (s.grads()[i] != summed_grad(i)) return false;
          return true;
        };
        // "e" is written by two components (a tied parameter): its bucket waits for both.
        opt.begin_reduction({{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 2}});
        opt.grads_ready("e");
        opt.grads_ready("d");
        opt.grads_ready("c");
        EXPECT_TRUE(is_local(10, 20)) << "zero " << zero << ": bucket started before e's second writer";
        opt.grads_ready("e");
        if (zero == 0) EXPECT_TRUE(is_summed(10, 20)) << "bucket {c, d, e} not reduced when complete";
        opt.grads_ready("b");
        opt.grads_ready("a");
        EXPECT_EQ(opt.buckets_overlapped(), 2);
        opt.finish_reduction();
        EXPECT_TRUE(is_local(6, 10)) << "zero " << zero << ": held-back b reduced early";
        EXPECT_TRUE(is_summed(0, 6) && is_summed(10, 20)) << "zero " << zero;
        opt.reduce_held_back();
        EXPECT_TRUE(is_summed(0, 20)) << "zero " << zero;
        // The next step starts over; without grads_ready calls finish_reduction does it all.
        for (std::size_t i = 0; i < s.size(); ++i) s.grads()[i] = local_grad(i, r);
        opt.reduce_gradients();
        EXPECT_EQ(opt.buckets_overlapped(), 0);
        EXPECT_TRUE(is_summed(0, 20)) << "zero " << zero;
      });
    for (auto& t : th) t.join();
  }
}

}  // namespace
}  // namespace strata::runtime
