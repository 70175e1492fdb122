// The collective and GEMM sweeps under mpirun: every row validated and timed on the
// world and on sub-groups; a communicator that corrupts one element gets counted
// wrong and is not timed; GEMM sweeps on all ranks agree.
#include <gtest/gtest.h>

#include <memory>

#include "kernels/cpu/mpi_communicator.h"
#include "kernels/memory_space.h"
#include "kernels/profiler/collective_sweep.h"
#include "kernels/profiler/cpu_gemm_runner.h"
#include "kernels/profiler/gemm_sweep.h"
#include "kernels/profiler/memory_bandwidth.h"

namespace strata::kernels::profiler {
namespace {

CollectiveSweepOptions small_options() {
  CollectiveSweepOptions o;
  o.max_bytes = 64 * 1024;
  o.timing = {2, 2, 4, 0.005};
  return o;
}

TEST(CollectiveSweep, SizesArePowersOfTwo) {
  EXPECT_EQ(sweep_sizes(8, 64), (std::vector<std::int64_t>{8, 16, 32, 64}));
  EXPECT_EQ(sweep_sizes(5, 16), (std::vector<std::int64_t>{8, 16}));
  EXPECT_TRUE(sweep_sizes(128, 64).empty());
}

TEST(CollectiveSweep, EveryCollectiveValidatesAndTimesOnTheWorld) {
  auto w = MpiCommunicator::world();
  auto mem = host_memory();
  auto recs = run_collective_sweep(*w, *mem, *w, small_options());
  const int n = w->size();
  ASSERT_FALSE(recs.empty());
  std::size_t per_kind[6] = {};
  for (const auto& r : recs) {
    EXPECT_TRUE(r.ok()) << to_string(r.collective) << " " << r.bytes << ": " << r.error;
    EXPECT_EQ(r.wrong, 0);
    EXPECT_EQ(r.ranks, n);
    EXPECT_GT(r.time.median_us, 0);
    EXPECT_NEAR(r.busbw_gbps, r.algbw_gbps * bus_factor(r.collective, n), 1e-12);
    EXPECT_NEAR(r.algbw_gbps, r.bytes / (r.time.median_us * 1e-6) / 1e9, 1e-9);
    EXPECT_EQ(r.bytes % 4, 0);
    EXPECT_EQ(r.count * 4, r.bytes);
    ++per_kind[static_cast<int>(r.collective)];
  }
  for (auto c : per_kind) EXPECT_GE(c, 10u);  // 8 B .. 64 KiB: up to 14 sizes each
}

TEST(CollectiveSweep, SubGroupsOfTwoRunConcurrently) {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n % 2 != 0) GTEST_SKIP() << "needs an even number of ranks";
  std::vector<std::vector<int>> groups;
  for (int s = 0; s < n; s += 2) groups.push_back({s, s + 1});
  auto g = MpiCommunicator::from_groups(groups);
  auto mem = host_memory();
  auto opt = small_options();
  opt.groups = n / 2;
  opt.collectives = {CollectiveKind::AllReduce, CollectiveKind::AllToAll};
  for (const auto& r : run_collective_sweep(*g, *mem, *g, opt)) {
    EXPECT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.ranks, 2);
    EXPECT_EQ(r.groups, n / 2);
    EXPECT_DOUBLE_EQ(bus_factor(r.collective, 2), r.collective == CollectiveKind::AllReduce ? 1.0 : 0.5);
  }
}

TEST(CollectiveSweep, OneRankGroupsAreTrivial) {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  auto self = MpiCommunicator::from_groups({{r}});
  auto mem = host_memory();
  auto recs = run_collective_sweep(*self, *mem, *self, small_options());
  ASSERT_FALSE(recs.empty());
  for (const auto& rec : recs) {
    EXPECT_TRUE(rec.ok()) << rec.error;
    EXPECT_TRUE(rec.trivial);
    if (rec.collective == CollectiveKind::AllReduce) { EXPECT_EQ(rec.busbw_gbps, 0); }
  }
}

// Forwards to MPI, then flips one element of every all-reduce result on rank 0.
class CorruptingComm : public Communicator {
 public:
  explicit CorruptingComm(Communicator& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void all_reduce_sum(float* d, std::size_t c) override {
    inner_.all_reduce_sum(d, c);
    if (rank() == 0) d[c / 2] += 1.0f;
    ++all_reduces;
  }
  void all_gather(const float* s, float* r, std::size_t c) override { inner_.all_gather(s, r, c); }
  void reduce_scatter_sum(const float* s, float* r, std::size_t c) override { inner_.reduce_scatter_sum(s, r, c); }
  void all_to_all(const float* s, float* r, std::size_t c) override { inner_.all_to_all(s, r, c); }
  void broadcast(float* d, std::size_t c, int root) override { inner_.broadcast(d, c, root); }
  void send(const float* d, std::size_t c, int p) override { inner_.send(d, c, p); }
  void recv(float* d, std::size_t c, int p) override { inner_.recv(d, c, p); }
  void barrier() override { inner_.barrier(); }
  int all_reduces = 0;

 private:
  Communicator& inner_;
};

TEST(CollectiveSweep, WrongResultsAreCountedAndNotTimed) {
  auto w = MpiCommunicator::world();
  CorruptingComm bad(*w);
  auto mem = host_memory();
  auto opt = small_options();
  opt.collectives = {CollectiveKind::AllReduce, CollectiveKind::AllGather};
  auto recs = run_collective_sweep(bad, *mem, *w, opt);
  int reduce_rows = 0;
  for (const auto& r : recs) {
    if (r.collective == CollectiveKind::AllReduce) {
      ++reduce_rows;
      EXPECT_FALSE(r.ok());
      EXPECT_EQ(r.wrong, 1);
      EXPECT_EQ(r.time.reps, 0);
      EXPECT_EQ(r.error, "1 wrong elements");
    } else {
      EXPECT_TRUE(r.ok()) << r.error;
    }
  }
  EXPECT_EQ(bad.all_reduces, reduce_rows);  // one checked run per row, nothing timed
}

TEST(GemmSweepAcrossRanks, AllRanksAgreeOnRowsAndTimes) {
  auto w = MpiCommunicator::world();
  CpuGemmRunner runner("cpu", 0.1);
  GemmSweepOptions opt;
  opt.timing = {1, 2, 5, 0.01};
  auto recs = run_gemm_sweep(runner, {{64, 48, 32, "a"}, {17, 19, 23, "b"}}, opt, w.get());
  ASSERT_EQ(recs.size(), 2u);
  for (const auto& r : recs) {
    EXPECT_TRUE(r.ok()) << r.error;
    // Summed over ranks: each rank checked the whole (small) result.
    EXPECT_EQ(r.check.checked, r.m * r.n * w->size());
    float t = static_cast<float>(r.time.median_us), t0 = t;
    w->broadcast(&t0, 1, 0);
    EXPECT_EQ(t, t0);  // the slowest rank's time: identical everywhere
  }
}

TEST(MemoryBandwidth, CopyOnAllRanks) {
  auto w = MpiCommunicator::world();
  auto mem = host_memory();
  auto bw = measure_copy_bandwidth(*mem, 8 << 20, {1, 2, 3, 0.01}, w.get());
  EXPECT_GT(bw.gbps, 0);
  EXPECT_NEAR(bw.gbps, 2.0 * bw.bytes / (bw.time.median_us * 1e-6) / 1e9, 1e-9);
}

}  // namespace
}  // namespace strata::kernels::profiler
