// Context parallel (CP) over the sequence, Megatron-Core's layout with load-balanced
// causal chunks: the sequence is cut into 2 * cp chunks and CP rank r holds chunks r and
// 2cp-1-r (its queries, its tokens through every other layer). Attention needs every
// earlier key; two ways to bring them (CpKvExchange):
//   ring        K/V passed around the CP ring, merged with an online softmax
//               (Megatron-Core's default; runtime/ring_attention.h)
//   all-gather  K/V all-gathered over the CP group before an exact-softmax attention core
//               and dK/dV reduce-scattered after it (Llama 3, Dubey et al. 2024, 3.3.2)
// Both give the one-rank numbers up to summation order.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace strata::runtime {

enum class CpKvExchange { Ring, AllGather };
const char* to_string(CpKvExchange e);
// "ring" or "all-gather"; InputError naming `flag` otherwise.
CpKvExchange cp_kv_exchange_from_string(const std::string& s, const std::string& flag);

struct CpGroup {
  kernels::Communicator* comm = nullptr;  // null when cp == 1
  int size = 1;
  int rank = 0;
  CpKvExchange exchange = CpKvExchange::Ring;
};

// Position in the full sequence (full_seq tokens) of local index t (0..full_seq/cp - 1)
// on CP rank `rank` of `cp`.
std::size_t cp_position(std::size_t full_seq, int cp, int rank, std::size_t t);

// k, v (rows, Sl, D) of this rank -> k_full, v_full (rows, Sl * cp, D) in position order,
// rows = batch * kv_heads. Collective over the CP group.
template <typename T>
void cp_gather_kv(const CpGroup& cp, std::size_t full_seq, std::size_t rows, std::size_t head_dim,
                  const T* k, const T* v, T* k_full, T* v_full);

// The transpose: dk_full, dv_full (rows, S, D) from every rank summed over the CP group,
// this rank's positions kept in dk, dv (rows, Sl, D) (overwritten). Collective.
template <typename T>
void cp_reduce_scatter_dkv(const CpGroup& cp, std::size_t full_seq, std::size_t rows,
                           std::size_t head_dim, const T* dk_full, const T* dv_full, T* dk, T* dv);

}  // namespace strata::runtime
