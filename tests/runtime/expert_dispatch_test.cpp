// Dispatch bookkeeping by hand: per-(rank, expert) counts, the send order, the
// expert-major placement of received rows; the one-rank exchange.
#include "runtime/expert_dispatch.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata::runtime {
namespace {

// Three tokens, top-2, four experts over two ranks (experts 0, 1 on rank 0; 2, 3 on
// rank 1). Assignments (token, slot) -> expert: (0,0) 3, (0,1) 1, (1,0) 0, (1,1) 1,
// (2,0) 0, (2,1) 1; assignment index = token * 2 + slot.
const std::vector<std::int32_t> kExperts = {3, 1, 0, 1, 0, 1};

TEST(ExpertDispatch, CountsAndSendOrderByHand) {
  const DispatchPlan p = plan_dispatch(kExperts, 2, 2);
  // expert 0 twice, expert 1 three times, expert 2 never, expert 3 once
  EXPECT_EQ(p.send_counts, (std::vector<std::size_t>{2, 3, 0, 1}));
  EXPECT_EQ(p.send_rows_per_rank(), (std::vector<std::size_t>{5, 1}));
  // by rank, expert, token, slot: e0 <- 2, 4; e1 <- 1, 3, 5; e3 <- 0
  EXPECT_EQ(p.send_order, (std::vector<std::size_t>{2, 4, 1, 3, 5, 0}));
  EXPECT_EQ(p.rows_sent(), 6u);
}

TEST(ExpertDispatch, ExpertMajorPositionsByHand) {
  DispatchPlan p;
  p.ranks = 2;
  p.experts_per_rank = 2;
  // received: 2 rows of expert 0 and 3 of expert 1 from rank 0, 1 row of expert 0 from rank 1
  p.recv_counts = {2, 3, 1, 0};
  EXPECT_EQ(p.rows_received(), 6u);
  EXPECT_EQ(p.rows_per_local_expert(), (std::vector<std::size_t>{3, 3}));
  EXPECT_EQ(p.recv_rows_per_rank(), (std::vector<std::size_t>{5, 1}));
  // expert-major: expert 0 (rank 0's two rows, then rank 1's), then expert 1
  EXPECT_EQ(expert_major_positions(p), (std::vector<std::size_t>{0, 1, 3, 4, 5, 2}));
}

TEST(ExpertDispatch, OneRankExchangeKeepsTheRows) {
  DispatchPlan p = plan_dispatch(kExperts, 1, 4);
  exchange_counts(EpGroup{}, p);
  EXPECT_EQ(p.recv_counts, p.send_counts);
  const std::vector<double> rows = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};  // 6 rows of width 2
  std::vector<double> out, back;
  dispatch_rows(EpGroup{}, p, rows.data(), 2, out);
  EXPECT_EQ(out, rows);
  combine_rows(EpGroup{}, p, out.data(), 2, back);
  EXPECT_EQ(back, rows);
}

}  // namespace
}  // namespace strata::runtime
