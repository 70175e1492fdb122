#include "calibration/block_benchmark.h"

#include <cmath>
#include <cstring>
#include <set>
#include <tuple>

#include <gtest/gtest.h>

#include "common/errors.h"
#include "costmodel/block_table.h"
#include "models/catalog.h"

namespace scl = strata::calibration;

namespace {

// Rank 0 of a pretend group of `size`: counts what the block asks of it.
class CountingGroup final : public strata::kernels::Communicator {
 public:
  explicit CountingGroup(int size) : size_(size) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  void all_reduce_sum(float*, std::size_t) override { ++calls; }
  void all_gather(const float* s, float* r, std::size_t n) override {
    ++calls;
    for (int i = 0; i < size_; ++i) std::memcpy(r + i * n, s, n * sizeof(float));
  }
  void reduce_scatter_sum(const float* s, float* r, std::size_t n) override {
    ++calls;
    std::memcpy(r, s, n * sizeof(float));
  }
  void all_to_all(const float*, float*, std::size_t) override { FAIL(); }
  void broadcast(float*, std::size_t, int) override { FAIL(); }
  void send(const float*, std::size_t, int) override { FAIL(); }
  void recv(float*, std::size_t, int) override { FAIL(); }
  void barrier() override {}
  int calls = 0;

 private:
  int size_;
};

scl::BlockBenchmarkOptions quick(std::vector<int> tps, std::vector<std::int64_t> mbs) {
  scl::BlockBenchmarkOptions o;
  o.tp_degrees = std::move(tps);
  o.micro_batches = std::move(mbs);
  o.timing = {0, 1, 2, 0.001};
  return o;
}

}  // namespace

TEST(BlockBenchmark, TimesEveryTpSpAndMicroBatchUnderTheModelsSignature) {
  const auto spec = strata::models::load_model("tiny");
  int calls = 0;
  const auto rows = scl::benchmark_blocks(spec, quick({1, 2}, {1, 2}), [&](int done, int total) {
    ++calls;
    EXPECT_LE(done, total);
  });
  std::set<std::tuple<int, bool, std::int64_t>> seen;
  for (const auto& r : rows) {
    EXPECT_EQ(r.sample.block, strata::costmodel::block_signature(spec));
    EXPECT_EQ(r.model, "tiny");
    EXPECT_GT(r.sample.fwd_us, 0) << r.shape;
    EXPECT_GT(r.sample.bwd_us, 0) << r.shape;
    EXPECT_EQ(r.sample.fwd_with_tp_us, 0) << r.shape;  // no real group given
    seen.insert({r.sample.tp, r.sample.sequence_parallel, r.sample.micro_batch});
  }
  EXPECT_EQ(seen, (std::set<std::tuple<int, bool, std::int64_t>>{
                      {1, false, 1}, {1, false, 2}, {2, false, 1}, {2, true, 1}, {2, false, 2}, {2, true, 2}}));
  EXPECT_EQ(calls, 6);
}

TEST(BlockBenchmark, ARealGroupIsTimedToo) {
  const auto spec = strata::models::load_model("tiny");
  CountingGroup group(2);
  auto o = quick({2}, {1});
  o.tp_group = [&](int tp) -> strata::kernels::Communicator* { return tp == 2 ? &group : nullptr; };
  const auto rows = scl::benchmark_blocks(spec, o);
  ASSERT_EQ(rows.size(), 2u);  // with and without SP
  for (const auto& r : rows) {
    EXPECT_GT(r.sample.fwd_with_tp_us, 0) << r.shape;
    EXPECT_GT(r.sample.bwd_with_tp_us, 0) << r.shape;
  }
  // Each pass of each block issues its TP collectives on the real group: 2 in the
  // forward and 2 in the backward (all-reduces, or all-gather/reduce-scatter with SP).
  EXPECT_GT(group.calls, 0);
  EXPECT_EQ(group.calls % 4, 0);
  CountingGroup wrong(4);
  o.tp_group = [&](int) -> strata::kernels::Communicator* { return &wrong; };
  EXPECT_THROW(scl::benchmark_blocks(spec, o), strata::InternalError);
}

TEST(BlockBenchmark, SkipsWhatWouldNotFitAndRejectsBadDegrees) {
  const auto spec = strata::models::load_model("tiny");
  auto o = quick({1, 2}, {1});
  o.max_bytes = 1024;
  std::vector<std::string> skipped;
  EXPECT_TRUE(scl::benchmark_blocks(spec, o, {}, &skipped).empty());
  ASSERT_EQ(skipped.size(), 3u);
  EXPECT_NE(skipped[0].find("GiB"), std::string::npos) << skipped[0];
  EXPECT_THROW(scl::benchmark_blocks(spec, quick({3}, {1})), strata::InputError);  // 4 heads
  EXPECT_THROW(scl::benchmark_blocks(spec, quick({1}, {0})), strata::InputError);
}
