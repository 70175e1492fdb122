// Expert dispatch: moving routed token rows to the expert-parallel rank that holds
// their expert and back (Megatron-Core's all-to-all token dispatcher, dropless).
//
// Each token's k (token, slot) assignments are sent, in the order (destination rank,
// expert, token, slot), to the rank holding the expert (expert e lives on ep rank
// e / experts_per_rank). The per-(rank, expert) row counts are exchanged first (an
// all-to-all of counts), then the rows (an all-to-all with a count per rank). A rank
// receives its experts' rows grouped by source rank, then by local expert. The combine
// is the same exchange reversed. Backward: the dispatch's gradient is the combine's
// exchange and vice versa (an all-to-all's adjoint is the reverse all-to-all).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "runtime/expert_tensor_parallel.h"

namespace strata::runtime {

// This rank's expert-parallel group. comm == nullptr means one rank (ep = 1). `etp`: the
// expert tensor-parallel group inside it (runtime/expert_tensor_parallel.h), the ranks
// holding slices of the same experts; the MoE layer uses both.
struct EpGroup {
  kernels::Communicator* comm = nullptr;
  int size = 1;
  int rank = 0;
  EtpGroup etp;
};

struct DispatchPlan {
  std::size_t ranks = 1, experts_per_rank = 0;
  // The assignments (index n * k + j) in send order: by destination rank, expert, token, slot.
  std::vector<std::size_t> send_order;
  // send_counts[r * experts_per_rank + e]: rows this rank sends to local expert e of rank r.
  std::vector<std::size_t> send_counts;
  // recv_counts[r * experts_per_rank + e]: rows rank r sends to this rank's local expert e
  // (filled by exchange_counts).
  std::vector<std::size_t> recv_counts;

  std::size_t rows_sent() const { return send_order.size(); }
  std::size_t rows_received() const;
  std::vector<std::size_t> send_rows_per_rank() const;  // (ranks)
  std::vector<std::size_t> recv_rows_per_rank() const;  // (ranks)
  // Rows each local expert receives, summed over source ranks (experts_per_rank).
  std::vector<std::size_t> rows_per_local_expert() const;
};

// The send side of the dispatch from the routing's experts (tokens * top_k global expert
// ids; -1 for a dropped slot, which is not sent): pure arithmetic, no communication.
// recv_counts is left empty.
DispatchPlan plan_dispatch(const std::vector<std::int32_t>& experts, std::size_t ranks,
                           std::size_t experts_per_rank);

// Fills plan.recv_counts: an all-to-all of the counts over the group (the counts travel
// as floats, exact below 2^24 rows).
void exchange_counts(const EpGroup& g, DispatchPlan& plan);

// Forward dispatch: row i of `rows` (rows_sent, width), in send order, goes to its
// rank; `out` receives rows_received rows, grouped by source rank, then local expert.
// double buffers only with one rank (the float64 gradient checks).
template <typename T>
void dispatch_rows(const EpGroup& g, const DispatchPlan& plan, const T* rows, std::size_t width,
                   std::vector<T>& out);
// The reverse exchange: `rows` (rows_received, width) in the received layout go back to
// their senders; `out` receives rows_sent rows in send order.
template <typename T>
void combine_rows(const EpGroup& g, const DispatchPlan& plan, const T* rows, std::size_t width,
                  std::vector<T>& out);

// Position, in expert-major order (local expert, then source rank, then arrival), of
// each received row (received layout: source rank, then local expert).
std::vector<std::size_t> expert_major_positions(const DispatchPlan& plan);

}  // namespace strata::runtime
