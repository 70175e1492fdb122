#include "runtime/expert_dispatch.h"

#include <algorithm>
#include <numeric>
#include <type_traits>

#include "common/errors.h"

namespace strata::runtime {

std::size_t DispatchPlan::rows_received() const {
  return std::accumulate(recv_counts.begin(), recv_counts.end(), std::size_t{0});
}

namespace {

std::vector<std::size_t> per_rank(const std::vector<std::size_t>& counts, std::size_t ranks,
                                  std::size_t experts_per_rank) {
  std::vector<std::size_t> out(ranks, 0);
  for (std::size_t r = 0; r < ranks; ++r)
    for (std::size_t e = 0; e < experts_per_rank; ++e) out[r] += counts[r * experts_per_rank + e];
  return out;
}

template <typename T>
void exchange(const EpGroup& g, const T* send, const std::vector<std::size_t>& send_rows,
              const std::vector<std::size_t>& recv_rows, std::size_t width, std::vector<T>& out) {
  const std::size_t total_in = std::accumulate(send_rows.begin(), send_rows.end(), std::size_t{0});
  const std::size_t total_out = std::accumulate(recv_rows.begin(), recv_rows.end(), std::size_t{0});
  out.assign(total_out * width, T(0));
  if (g.size == 1) {
    STRATA_CHECK(total_in == total_out, "one-rank dispatch: {} rows sent, {} expected", total_in, total_out);
    std::copy_n(send, total_in * width, out.data());
    return;
  }
  if constexpr (!std::is_same_v<T, float>) {
    throw InternalError("expert-parallel exchange on double buffers needs ep = 1");
  } else {
    STRATA_CHECK(g.comm != nullptr, "ep group of size {} has no communicator", g.size);
    std::vector<std::size_t> sc(send_rows.size()), rc(recv_rows.size());
    for (std::size_t r = 0; r < sc.size(); ++r) sc[r] = send_rows[r] * width;
    for (std::size_t r = 0; r < rc.size(); ++r) rc[r] = recv_rows[r] * width;
    g.comm->all_to_all_v(send, sc, out.data(), rc);
  }
}

}  // namespace

std::vector<std::size_t> DispatchPlan::send_rows_per_rank() const {
  return per_rank(send_counts, ranks, experts_per_rank);
}
std::vector<std::size_t> DispatchPlan::recv_rows_per_rank() const {
  return per_rank(recv_counts, ranks, experts_per_rank);
}
std::vector<std::size_t> DispatchPlan::rows_per_local_expert() const {
  std::vector<std::size_t> out(experts_per_rank, 0);
  for (std::size_t r = 0; r < ranks; ++r)
    for (std::size_t e = 0; e < experts_per_rank; ++e) out[e] += recv_counts[r * experts_per_rank + e];
  return out;
}

DispatchPlan plan_dispatch(const std::vector<std::int32_t>& experts, std::size_t ranks,
                           std::size_t experts_per_rank) {
  STRATA_CHECK(ranks >= 1 && experts_per_rank >= 1, "dispatch over {} ranks x {} experts", ranks,
               experts_per_rank);
  const std::size_t total = ranks * experts_per_rank;
  DispatchPlan p;
  p.ranks = ranks;
  p.experts_per_rank = experts_per_rank;
  p.send_counts.assign(total, 0);
  std::size_t sent = 0;
  for (const std::int32_t e : experts) {
    STRATA_CHECK(e >= -1 && e < static_cast<std::int64_t>(total), "expert {} of {}", e, total);
    if (e < 0) continue;  // dropped (expert_capacity.h)
    ++p.send_counts[static_cast<std::size_t>(e)];
    ++sent;
  }
  // Global expert ids are already (rank, local expert) in row-major order: a stable
  // counting sort by expert gives (rank, expert, token, slot).
  std::vector<std::size_t> at(total, 0);
  for (std::size_t e = 1; e < total; ++e) at[e] = at[e - 1] + p.send_counts[e - 1];
  p.send_order.resize(sent);
  for (std::size_t i = 0; i < experts.size(); ++i)
    if (experts[i] >= 0) p.send_order[at[static_cast<std::size_t>(experts[i])]++] = i;
  return p;
}

void exchange_counts(const EpGroup& g, DispatchPlan& plan) {
  if (g.size == 1) {
    plan.recv_counts = plan.send_counts;
    return;
  }
  STRATA_CHECK(g.comm != nullptr && static_cast<std::size_t>(g.size) == plan.ranks, "ep group of {} for {} ranks",
               g.size, plan.ranks);
  std::vector<float> send(plan.send_counts.begin(), plan.send_counts.end()), recv(send.size());
  g.comm->all_to_all(send.data(), recv.data(), plan.experts_per_rank);
  plan.recv_counts.resize(recv.size());
  for (std::size_t i = 0; i < recv.size(); ++i) plan.recv_counts[i] = static_cast<std::size_t>(recv[i]);
}

template <typename T>
void dispatch_rows(const EpGroup& g, const DispatchPlan& plan, const T* rows, std::size_t width,
                   std::vector<T>& out) {
  exchange(g, rows, plan.send_rows_per_rank(), plan.recv_rows_per_rank(), width, out);
}

template <typename T>
void combine_rows(const EpGroup& g, const DispatchPlan& plan, const T* rows, std::size_t width,
                  std::vector<T>& out) {
  exchange(g, rows, plan.recv_rows_per_rank(), plan.send_rows_per_rank(), width, out);
}

std::vector<std::size_t> expert_major_positions(const DispatchPlan& plan) {
  const std::size_t R = plan.ranks, E = plan.experts_per_rank;
  // start of block (expert e, source r) in expert-major order
  std::vector<std::size_t> start(R * E, 0);
  std::size_t at = 0;
  for (std::size_t e = 0; e < E; ++e)
    for (std::size_t r = 0; r < R; ++r) {
      start[r * E + e] = at;
      at += plan.recv_counts[r * E + e];
    }
  std::vector<std::size_t> pos;
  pos.reserve(at);
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t e = 0; e < E; ++e)
      for (std::size_t i = 0; i < plan.recv_counts[r * E + e]; ++i) pos.push_back(start[r * E + e] + i);
  return pos;
}

template void dispatch_rows(const EpGroup&, const DispatchPlan&, const float*, std::size_t, std::vector<float>&);
template void dispatch_rows(const EpGroup&, const DispatchPlan&, const double*, std::size_t, std::vector<double>&);
template void combine_rows(const EpGroup&, const DispatchPlan&, const float*, std::size_t, std::vector<float>&);
template void combine_rows(const EpGroup&, const DispatchPlan&, const double*, std::size_t, std::vector<double>&);

}  // namespace strata::runtime
