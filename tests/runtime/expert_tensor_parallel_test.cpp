// The expert tensor-parallel exchange (runtime/expert_tensor_parallel.h) on two in-process
// ranks: rows gathered into expert-major order, and partial rows reduce-scattered back to
// their owners, against orders and sums worked out by hand.
#include "runtime/expert_tensor_parallel.h"

#include <gtest/gtest.h>

#include <thread>

#include "thread_communicator.h"

namespace strata::runtime {
namespace {

TEST(ExpertTensorParallel, GathersExpertMajorAndReduceScattersToTheOwners) {
  // Rank 0 holds rows a0 a1 (local expert 0) and a2 (expert 1) = 1, 2, 3; rank 1 holds b0
  // (expert 0) and b1 b2 (expert 1) = 10, 20, 30. Gathered by expert, then rank:
  // e0: a0 a1 b0, e1: a2 b1 b2 = 1 2 10 3 20 30.
  const std::vector<std::vector<std::size_t>> per_expert = {{2, 1}, {1, 2}};
  const std::vector<std::vector<float>> rows = {{1, 2, 3}, {10, 20, 30}};
  testing::ThreadGroup group(2);
  std::vector<EtpGather> plans(2);
  std::vector<std::vector<float>> gathered(2), back(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      testing::ThreadCommunicator comm(group, r);
      const EtpGroup g{&comm, 2, r};
      const auto i = static_cast<std::size_t>(r);
      plans[i] = plan_etp_gather(g, per_expert[i]);
      etp_gather_rows(g, plans[i], rows[i].data(), 1, gathered[i]);
      // each rank's partial output is (rank + 1) x its gathered rows: the sum is 3 x them
      std::vector<float> partial(gathered[i]);
      for (float& v : partial) v *= static_cast<float>(r + 1);
      etp_reduce_scatter_rows(g, plans[i], partial.data(), 1, back[i]);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    const auto i = static_cast<std::size_t>(r);
    EXPECT_EQ(plans[i].rows_per_rank, (std::vector<std::size_t>{3, 3}));
    EXPECT_EQ(plans[i].rows_per_expert, (std::vector<std::size_t>{3, 3}));
    EXPECT_EQ(plans[i].expert_major, (std::vector<std::size_t>{0, 1, 3, 2, 4, 5}));
    EXPECT_EQ(gathered[i], (std::vector<float>{1, 2, 10, 3, 20, 30}));
  }
  EXPECT_EQ(back[0], (std::vector<float>{3, 6, 9}));
  EXPECT_EQ(back[1], (std::vector<float>{30, 60, 90}));
}

TEST(ExpertTensorParallel, OneRankIsTheIdentity) {
  const EtpGroup one;
  const EtpGather p = plan_etp_gather(one, {2, 0, 1});
  EXPECT_EQ(p.expert_major, (std::vector<std::size_t>{0, 1, 2}));
  const std::vector<double> rows = {1, 2, 3, 4, 5, 6};  // 3 rows of width 2
  std::vector<double> out, back;
  etp_gather_rows(one, p, rows.data(), 2, out);
  EXPECT_EQ(out, rows);
  etp_reduce_scatter_rows(one, p, out.data(), 2, back);
  EXPECT_EQ(back, rows);
}

}  // namespace
}  // namespace strata::runtime
