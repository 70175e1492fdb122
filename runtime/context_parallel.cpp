#include "runtime/context_parallel.h"

#include <algorithm>
#include <type_traits>

#include "common/errors.h"

namespace strata::runtime {

const char* to_string(CpKvExchange e) { return e == CpKvExchange::Ring ? "ring" : "all-gather"; }

CpKvExchange cp_kv_exchange_from_string(const std::string& s, const std::string& flag) {
  if (s == "ring") return CpKvExchange::Ring;
  if (s == "all-gather") return CpKvExchange::AllGather;
  input_error("{} ('{}') must be ring or all-gather", flag, s);
}

std::size_t cp_position(std::size_t full_seq, int cp, int rank, std::size_t t) {
  if (cp == 1) return t;
  const auto n = static_cast<std::size_t>(cp), r = static_cast<std::size_t>(rank);
  const std::size_t chunk = full_seq / (2 * n);
  return t < chunk ? r * chunk + t : (2 * n - 1 - r) * chunk + (t - chunk);
}

namespace {

// Copies between a rank-major buffer (rank r's (rows, Sl, D) block at r * rows * Sl * D)
// and position order (rows, S, D). to_full: src is rank-major; else src is position order.
template <typename T>
void permute(const T* src, T* dst, int cp, std::size_t full_seq, std::size_t rows, std::size_t D,
             bool to_full) {
  const std::size_t Sl = full_seq / static_cast<std::size_t>(cp);
  for (int r = 0; r < cp; ++r)
    for (std::size_t row = 0; row < rows; ++row)
      for (std::size_t t = 0; t < Sl; ++t) {
        const std::size_t major = ((static_cast<std::size_t>(r) * rows + row) * Sl + t) * D;
        const std::size_t full = (row * full_seq + cp_position(full_seq, cp, r, t)) * D;
        if (to_full) std::copy_n(src + major, D, dst + full);
        else std::copy_n(src + full, D, dst + major);
      }
}

}  // namespace

template <typename T>
void cp_gather_kv(const CpGroup& cp, std::size_t full_seq, std::size_t rows, std::size_t head_dim,
                  const T* k, const T* v, T* k_full, T* v_full) {
  if constexpr (!std::is_same_v<T, float>) {
    STRATA_CHECK(false, "context parallel runs in float only");
  } else {
    STRATA_CHECK(cp.comm != nullptr && cp.size > 1, "cp_gather_kv without a CP group");
    const std::size_t n = rows * (full_seq / static_cast<std::size_t>(cp.size)) * head_dim;
    // One all-gather carries K and V: send [k | v], receive rank-major [k_r | v_r].
    std::vector<float> send(2 * n), recv(2 * n * static_cast<std::size_t>(cp.size));
    std::copy_n(k, n, send.begin());
    std::copy_n(v, n, send.begin() + static_cast<std::ptrdiff_t>(n));
    cp.comm->all_gather(send.data(), recv.data(), 2 * n);
    std::vector<float> ks(n * static_cast<std::size_t>(cp.size)), vs(ks.size());
    for (int r = 0; r < cp.size; ++r) {
      const float* from = recv.data() + 2 * n * static_cast<std::size_t>(r);
      std::copy_n(from, n, ks.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(r)));
      std::copy_n(from + n, n, vs.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(r)));
    }
    permute(ks.data(), k_full, cp.size, full_seq, rows, head_dim, true);
    permute(vs.data(), v_full, cp.size, full_seq, rows, head_dim, true);
  }
}

template <typename T>
void cp_reduce_scatter_dkv(const CpGroup& cp, std::size_t full_seq, std::size_t rows,
                           std::size_t head_dim, const T* dk_full, const T* dv_full, T* dk, T* dv) {
  if constexpr (!std::is_same_v<T, float>) {
    STRATA_CHECK(false, "context parallel runs in float only");
  } else {
    STRATA_CHECK(cp.comm != nullptr && cp.size > 1, "cp_reduce_scatter_dkv without a CP group");
    const std::size_t n = rows * (full_seq / static_cast<std::size_t>(cp.size)) * head_dim;
    const std::size_t total = n * static_cast<std::size_t>(cp.size);
    std::vector<float> dks(total), dvs(total), send(2 * total), recv(2 * n);
    permute(dk_full, dks.data(), cp.size, full_seq, rows, head_dim, false);
    permute(dv_full, dvs.data(), cp.size, full_seq, rows, head_dim, false);
    for (int r = 0; r < cp.size; ++r) {
      float* to = send.data() + 2 * n * static_cast<std::size_t>(r);
      std::copy_n(dks.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(r)), n, to);
      std::copy_n(dvs.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(r)), n, to + n);
    }
    cp.comm->reduce_scatter_sum(send.data(), recv.data(), 2 * n);
    std::copy_n(recv.begin(), n, dk);
    std::copy_n(recv.begin() + static_cast<std::ptrdiff_t>(n), n, dv);
  }
}

template void cp_gather_kv<float>(const CpGroup&, std::size_t, std::size_t, std::size_t, const float*,
                                  const float*, float*, float*);
template void cp_gather_kv<double>(const CpGroup&, std::size_t, std::size_t, std::size_t,
                                   const double*, const double*, double*, double*);
template void cp_reduce_scatter_dkv<float>(const CpGroup&, std::size_t, std::size_t, std::size_t,
                                           const float*, const float*, float*, float*);
template void cp_reduce_scatter_dkv<double>(const CpGroup&, std::size_t, std::size_t, std::size_t,
                                            const double*, const double*, double*, double*);

}  // namespace strata::runtime
