// AdamW against a hand-written double-precision reference; the DP optimizer on thread-
// ranks: zero 0 to 3 all equal one rank that saw the summed gradient, weight decay
// touches only the parameters marked for it, and the bytes the store holds under each
// stage (sharded parts, gathered slabs, prefetch) are the ones counted by hand.
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

// w (5 x 3) at [0, 15), b (4) at [15, 19); padded to 21 for 3 shards of 7.
ParameterStore<float> make_store(std::size_t pad, StoreSharding sharding = {}) {
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
  s.finalize(pad, sharding);
  s.init(9);
  return s;
}

// gradient of rank r at flat index i: deterministic values
float grad_value(std::size_t i, int rank) {
  return 0.01f * static_cast<float>((static_cast<int>(i) * 7 + rank * 3) % 11) - 0.05f;
}
void fill_grads(ParameterStore<float>& s, int rank) {
  for (std::size_t i = 0; i < s.size(); ++i) s.grads()[i] = grad_value(i, rank);
}

std::vector<ParamSpec> specs_of(const ParameterStore<float>& s, const std::vector<std::string>& names) {
  std::vector<ParamSpec> out;
  for (const auto& n : names) out.push_back(s.entry(n).spec);
  return out;
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
        ParameterStore<float> s =
            make_store(zero >= 1 ? 3 : 1, DistributedOptimizer::sharding_for(zero, 3, r));
        GradReduction red;
        red.bucket_floats = 4;
        DistributedOptimizer opt(s, &comm, zero, cfg, red);
        // by hand: 19 values (zero 0), padded to 21 for shards of 7 (zero >= 1), 4 bytes each
        const std::size_t whole = zero == 0 ? 19 : 21;
        EXPECT_EQ(opt.exp_avg().size(), zero >= 1 ? 7u : 19u);
        EXPECT_EQ(s.memory().grad_kept_bytes, 4 * (zero >= 2 ? 7 : whole)) << "zero " << zero;
        EXPECT_EQ(s.memory().param_kept_bytes, 4 * (zero == 3 ? 7 : whole)) << "zero " << zero;
        EXPECT_EQ(opt.optimizer_bytes(), 2 * 4 * (zero >= 1 ? 7u : 19u)) << "zero " << zero;
        const auto all = specs_of(s, {"w", "b"});
        for (int step = 1; step <= 3; ++step) {
          s.zero_grads();
          opt.begin_reduction({});
          if (zero >= 2) {
            // a component's backward: whole gradients only between acquire and release
            EXPECT_EQ(s.grad("w"), nullptr);
            opt.acquire_grads(all);
            for (const auto& spec : all) {
              const auto& e = s.entry(spec.name);
              for (std::size_t i = 0; i < e.numel; ++i) s.grad(spec.name)[i] = grad_value(e.offset + i, r + step);
            }
            opt.release_grads(all);  // reduce-scattered into the shard
            EXPECT_EQ(s.grad("b"), nullptr);
          } else {
            fill_grads(s, r + step);
          }
          opt.finish_reduction();
          opt.reduce_held_back();
          opt.step(step, 1.0f);
        }
        EXPECT_EQ(s.memory().peak_grad_slab_bytes, zero >= 2 ? 19u * 4 : 0u) << "zero " << zero;
        std::vector<float>& out = params[static_cast<std::size_t>(r)];
        if (zero == 3) {
          EXPECT_EQ(s.param("w"), nullptr);  // released: nothing to read
          opt.fetch_params(all);
          opt.wait_params(all);
          for (const auto& spec : all)
            out.insert(out.end(), s.param(spec.name), s.param(spec.name) + s.entry(spec.name).numel);
          opt.release_params(all);
          EXPECT_EQ(s.memory().peak_param_slab_bytes, 19u * 4);
          EXPECT_EQ(s.memory().param_slab_bytes, 0u);
        } else {
          out.assign(s.params().begin(), s.params().begin() + static_cast<std::ptrdiff_t>(s.size()));
        }
      });
    for (auto& t : th) t.join();
    for (int r = 0; r < 3; ++r)
      for (std::size_t i = 0; i < ref.size(); ++i)
        EXPECT_NEAR(params[static_cast<std::size_t>(r)][i], ref.params()[i], 1e-6) << "zero " << zero << " rank " << r << " [" << i << "]";
  }
}

// ZeRO-3 prefetch: the next component's parameters are fetched before the current one is
// released, so two components are resident at once; without prefetch one at a time.
// Components {w} (15 values) and {b} (4): peak 19 x 4 bytes with prefetch, 15 x 4 without.
TEST(DistributedOptimizer, Zero3PrefetchHoldsTwoComponentsAtOnce) {
  for (bool prefetch : {true, false}) {
    testing::ThreadGroup g(3);
    std::vector<std::thread> th;
    for (int r = 0; r < 3; ++r)
      th.emplace_back([&, r] {
        testing::ThreadCommunicator comm(g, r);
        ParameterStore<float> s = make_store(3, DistributedOptimizer::sharding_for(3, 3, r));
        DistributedOptimizer opt(s, &comm, 3, AdamWConfig{});
        const ParameterStore<float> whole = make_store(1);
        const std::vector<std::vector<ParamSpec>> order = {specs_of(s, {"w"}), specs_of(s, {"b"})};
        if (prefetch) opt.fetch_params(order[0]);
        for (std::size_t i = 0; i < order.size(); ++i) {
          if (!prefetch) opt.fetch_params(order[i]);
          opt.wait_params(order[i]);
          if (prefetch && i + 1 < order.size()) opt.fetch_params(order[i + 1]);
          const auto& e = s.entry(order[i][0].name);
          for (std::size_t k = 0; k < e.numel; ++k)  // the gathered values are the initial ones
            ASSERT_EQ(s.param(e.spec.name)[k], whole.params()[e.offset + k]) << e.spec.name << "[" << k << "]";
          opt.release_params(order[i]);
        }
        EXPECT_EQ(s.memory().peak_param_slab_bytes, prefetch ? 19u * 4 : 15u * 4) << "prefetch " << prefetch;
        EXPECT_EQ(s.memory().param_slab_bytes, 0u);
        // peak total: kept params 7 + kept grads 7 + slabs, x 4 bytes
        EXPECT_EQ(s.memory().peak_total_bytes, (14u + (prefetch ? 19u : 15u)) * 4);
      });
    for (auto& t : th) t.join();
  }
}

// A parameter named by two components held at once (the tied embedding of the embedding and
// the head on one rank) is resident once and freed after its last holder lets go.
TEST(ParameterStore, SharedEntryIsHeldOnce) {
  ParameterStore<float> s = make_store(3, StoreSharding{3, 1, true, true});
  EXPECT_EQ(s.kept_begin(StorePart::Params), 7u);
  EXPECT_EQ(s.hold(StorePart::Params, {"w", "b"}).size(), 1u);  // one contiguous slab [0, 19)
  EXPECT_TRUE(s.hold(StorePart::Params, {"b"}).empty());         // already resident
  EXPECT_EQ(s.memory().param_slab_bytes, 19u * 4);
  EXPECT_TRUE(s.unhold(StorePart::Params, {"w", "b"}).empty());  // b still held
  EXPECT_NE(s.param("b"), nullptr);
  EXPECT_EQ(s.param("w"), nullptr);
  EXPECT_EQ(s.unhold(StorePart::Params, {"b"}).size(), 1u);
  EXPECT_EQ(s.param("b"), nullptr);
  EXPECT_EQ(s.memory().param_slab_bytes, 0u);
  EXPECT_EQ(s.memory().peak_param_slab_bytes, 19u * 4);
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
        if (zero == 0) { EXPECT_TRUE(is_summed(10, 20)) << "bucket {c, d, e} not reduced when complete"; }
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
