// Tensor parallelism without MPI: tp ranks as threads with an in-process communicator.
// Every rank's loss must equal the one-rank loss and every local gradient must equal the
// matching slice of the one-rank gradient (replicated parameters fed by sequence-parallel
// shards after summing over the TP group, as the trainer's gradient sync does). A TP bug
// that scales a gradient (a missing or doubled all-reduce) fails here even though Adam
// would hide it from a loss curve.
#include "runtime/tp_regions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "model_test_util.h"
#include "thread_communicator.h"

namespace strata::runtime {
namespace {

// The values of `local` (a shard spec) taken from the full tensor `full` (rows x cols).
std::vector<float> slice(const ParamSpec& local, const std::vector<float>& full) {
  std::vector<float> out;
  auto ranges = local.row_ranges;
  if (ranges.empty()) ranges.emplace_back(0, local.rows);
  for (const auto& [b, n] : ranges)
    for (std::int64_t r = b; r < b + n; ++r)
      for (std::int64_t c = local.col_begin; c < local.col_begin + local.local_cols(); ++c)
        out.push_back(full[static_cast<std::size_t>(r * local.cols + c)]);
  return out;
}

struct TpCase {
  models::ModelSpec spec;
  int tp;
  bool sp;
  planner::Recompute recompute;
};

void check_tp(const TpCase& c) {
  const std::int64_t batch = 2;
  const auto layout = testing::whole_model(static_cast<int>(c.spec.layers));
  ModelDims d1 = make_model_dims(c.spec, batch, 1, 0, false, planner::Recompute::None);
  testing::TestModel<float> ref(d1, layout, 21, 0.2);
  const auto tokens = testing::random_tokens(d1.rows(), static_cast<int>(d1.vocab), 31);
  const auto targets = testing::random_tokens(d1.rows(), static_cast<int>(d1.vocab), 32);
  const float w = 1.0f / static_cast<float>(d1.rows());
  const double ref_loss = ref.loss_and_grads(tokens, targets, w);

  testing::ThreadGroup group(c.tp);
  std::vector<std::unique_ptr<testing::TestModel<float>>> models(static_cast<std::size_t>(c.tp));
  std::vector<double> losses(static_cast<std::size_t>(c.tp));
  std::vector<std::thread> threads;
  for (int r = 0; r < c.tp; ++r)
    threads.emplace_back([&, r] {
      testing::ThreadCommunicator comm(group, r);
      ModelDims d = make_model_dims(c.spec, batch, c.tp, r, c.sp, c.recompute);
      auto m = std::make_unique<testing::TestModel<float>>(d, layout, 21, 0.2,
                                                           TpGroup{&comm, c.tp, r, c.sp});
      losses[static_cast<std::size_t>(r)] = m->loss_and_grads(tokens, targets, w);
      models[static_cast<std::size_t>(r)] = std::move(m);
    });
  for (auto& t : threads) t.join();

  const std::string label = std::string(c.spec.name) + " tp" + std::to_string(c.tp) +
                            (c.sp ? " sp" : "") + " " + planner::to_string(c.recompute);
  for (double l : losses) EXPECT_NEAR(l, ref_loss, 1e-5 * ref_loss) << label;
  for (const auto& full : ref.store.entries()) {
    const std::vector<float> ref_grad(ref.store.grads().begin() + static_cast<std::ptrdiff_t>(full.offset),
                                      ref.store.grads().begin() + static_cast<std::ptrdiff_t>(full.offset + full.numel));
    float scale = 1e-6f;
    for (float g : ref_grad) scale = std::max(scale, std::abs(g));
    std::vector<float> partial_sum;
    for (int r = 0; r < c.tp; ++r) {
      auto& store = models[static_cast<std::size_t>(r)]->store;
      const auto& e = store.entry(full.spec.name);
      std::vector<float> got(store.grads().begin() + static_cast<std::ptrdiff_t>(e.offset),
                             store.grads().begin() + static_cast<std::ptrdiff_t>(e.offset + e.numel));
      if (e.spec.sp_partial_grad) {  // the trainer all-reduces these over TP
        if (partial_sum.empty()) partial_sum.assign(got.size(), 0.0f);
        for (std::size_t i = 0; i < got.size(); ++i) partial_sum[i] += got[i];
        continue;
      }
      const std::vector<float> want = slice(e.spec, ref_grad);
      ASSERT_EQ(got.size(), want.size()) << label << " " << e.spec.name;
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 2e-5 * scale) << label << " " << e.spec.name << "[" << i << "] rank " << r;
    }
    for (std::size_t i = 0; i < partial_sum.size(); ++i)
      ASSERT_NEAR(partial_sum[i], ref_grad[i], 2e-5 * scale) << label << " " << full.spec.name << "[" << i << "]";
  }
}

models::ModelSpec with_vocab(models::ModelSpec s, std::int64_t vocab) {
  s.vocab = vocab;  // 300: padded to 512 for tp 2, so both ranks hold real vocabulary rows
  return s;
}

TEST(TpRegions, TensorParallelGptMatchesOneRank) {
  for (int tp : {2, 4})
    for (bool sp : {false, true})
      check_tp({with_vocab(testing::small_gpt(), 300), tp, sp, planner::Recompute::None});
}

TEST(TpRegions, TensorParallelLlamaMatchesOneRank) {
  for (bool sp : {false, true})
    check_tp({with_vocab(testing::small_llama(), 300), 2, sp, planner::Recompute::None});
}

TEST(TpRegions, RecomputeUnderTensorParallelismMatchesOneRank) {
  for (auto mode : {planner::Recompute::Selective, planner::Recompute::Full}) {
    check_tp({with_vocab(testing::small_gpt(), 300), 2, true, mode});
    check_tp({with_vocab(testing::small_llama(), 300), 2, false, mode});
  }
}

TEST(TpRegions, RegionTagsNameTheCollectivePairs) {
  TpGroup g;
  EXPECT_EQ(tp::enter_column_tag(g), models::TpComm::CopyForwardAllReduceBackward);
  EXPECT_EQ(tp::exit_row_tag(g), models::TpComm::AllReduceForwardCopyBackward);
  g.sequence_parallel = true;
  EXPECT_EQ(tp::enter_column_tag(g), models::TpComm::AllGatherForwardReduceScatterBackward);
  EXPECT_EQ(tp::exit_row_tag(g), models::TpComm::ReduceScatterForwardAllGatherBackward);
}

TEST(TpRegions, PairsAreAdjointOnTwoRanks) {
  // <f(x), y> == <x, f^T(y)> for each region with its recorded backward (per rank sums).
  testing::ThreadGroup group(2);
  std::vector<double> lhs(2), rhs(2);
  std::vector<std::thread> th;
  for (int r = 0; r < 2; ++r)
    th.emplace_back([&, r] {
      testing::ThreadCommunicator comm(group, r);
      TpGroup g{&comm, 2, r, true};
      const std::size_t n = 3;
      std::vector<float> x_local = {1.0f + r, 2.0f, -1.0f * r}, x_full(2 * n), y_full(2 * n);
      for (std::size_t i = 0; i < 2 * n; ++i) y_full[i] = 0.5f * static_cast<float>(i) - static_cast<float>(r);
      tp::gather_from_sp_region_forward(g, x_full.data(), x_local.data(), n);
      double a = 0;
      for (std::size_t i = 0; i < 2 * n; ++i) a += x_full[i] * y_full[i];
      std::vector<float> gy(n);
      tp::gather_from_sp_region_backward(g, gy.data(), y_full.data(), n);
      double b = 0;
      for (std::size_t i = 0; i < n; ++i) b += x_local[i] * gy[i];
      lhs[static_cast<std::size_t>(r)] = a;
      rhs[static_cast<std::size_t>(r)] = b;
    });
  for (auto& t : th) t.join();
  // The gathered tensor is the same on both ranks; the adjoint identity holds for the sums.
  EXPECT_NEAR(lhs[0] + lhs[1], rhs[0] + rhs[1], 1e-5);
}

}  // namespace
}  // namespace strata::runtime
