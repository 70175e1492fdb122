#include "runtime/expert_tensor_parallel.h"

#include <algorithm>
#include <type_traits>

#include "common/errors.h"

namespace strata::runtime {

EtpGather plan_etp_gather(const EtpGroup& g, const std::vector<std::size_t>& local_rows_per_expert) {
  const std::size_t n = static_cast<std::size_t>(g.size), El = local_rows_per_expert.size();
  // counts[q * El + e]: rows etp rank q holds for local expert e (floats: exact below 2^24).
  std::vector<float> mine(local_rows_per_expert.begin(), local_rows_per_expert.end()), all(n * El);
  if (g.comm != nullptr && n > 1) g.comm->all_gather(mine.data(), all.data(), El);
  else all = mine;
  EtpGather p;
  p.rows_per_rank.assign(n, 0);
  p.rows_per_expert.assign(El, 0);
  for (std::size_t q = 0; q < n; ++q)
    for (std::size_t e = 0; e < El; ++e) {
      const auto c = static_cast<std::size_t>(all[q * El + e]);
      p.rows_per_rank[q] += c;
      p.rows_per_expert[e] += c;
    }
  // Gathered expert-major start of (expert e, rank q): the experts before e, then the
  // ranks before q within e.
  std::size_t total = 0;
  for (std::size_t c : p.rows_per_rank) total += c;
  p.expert_major.resize(total);
  std::vector<std::size_t> start(n * El);
  std::size_t at = 0;
  for (std::size_t e = 0; e < El; ++e)
    for (std::size_t q = 0; q < n; ++q) {
      start[q * El + e] = at;
      at += static_cast<std::size_t>(all[q * El + e]);
    }
  std::size_t i = 0;  // rank-major: rank q's rows, expert-major within
  for (std::size_t q = 0; q < n; ++q)
    for (std::size_t e = 0; e < El; ++e)
      for (std::size_t r = 0; r < static_cast<std::size_t>(all[q * El + e]); ++r) p.expert_major[i++] = start[q * El + e] + r;
  return p;
}

namespace {

template <typename T>
void require_float(const EtpGroup& g) {
  if constexpr (!std::is_same_v<T, float>)
    STRATA_CHECK(g.comm == nullptr || g.size == 1, "the etp exchange moves float rows only");
}

std::vector<std::size_t> scaled(const std::vector<std::size_t>& rows, std::size_t width) {
  std::vector<std::size_t> out(rows);
  for (std::size_t& c : out) c *= width;
  return out;
}

}  // namespace

template <typename T>
void etp_gather_rows(const EtpGroup& g, const EtpGather& plan, const T* rows, std::size_t width,
                     std::vector<T>& out) {
  require_float<T>(g);
  std::vector<T> rank_major(plan.rows() * width);
  if (g.comm != nullptr && g.size > 1) {
    if constexpr (std::is_same_v<T, float>) {
      g.comm->iall_gather(rows, rank_major.data(), scaled(plan.rows_per_rank, width))->wait();
    }
  } else {
    std::copy_n(rows, plan.rows() * width, rank_major.data());
  }
  out.resize(plan.rows() * width);
  for (std::size_t i = 0; i < plan.rows(); ++i)
    std::copy_n(rank_major.data() + i * width, width, out.data() + plan.expert_major[i] * width);
}

template <typename T>
void etp_reduce_scatter_rows(const EtpGroup& g, const EtpGather& plan, const T* rows, std::size_t width,
                             std::vector<T>& out) {
  require_float<T>(g);
  std::vector<T> rank_major(plan.rows() * width);
  for (std::size_t i = 0; i < plan.rows(); ++i)
    std::copy_n(rows + plan.expert_major[i] * width, width, rank_major.data() + i * width);
  const std::size_t mine = plan.rows_per_rank[static_cast<std::size_t>(g.rank)] * width;
  out.resize(mine);
  if (g.comm != nullptr && g.size > 1) {
    if constexpr (std::is_same_v<T, float>) {
      g.comm->ireduce_scatter_sum(rank_major.data(), out.data(), scaled(plan.rows_per_rank, width))->wait();
    }
  } else {
    std::copy_n(rank_major.data(), mine, out.data());
  }
}

template void etp_gather_rows<float>(const EtpGroup&, const EtpGather&, const float*, std::size_t, std::vector<float>&);
template void etp_gather_rows<double>(const EtpGroup&, const EtpGather&, const double*, std::size_t,
                                      std::vector<double>&);
template void etp_reduce_scatter_rows<float>(const EtpGroup&, const EtpGather&, const float*, std::size_t,
                                             std::vector<float>&);
template void etp_reduce_scatter_rows<double>(const EtpGroup&, const EtpGather&, const double*, std::size_t,
                                              std::vector<double>&);

}  // namespace strata::runtime
