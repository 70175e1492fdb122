// Tensor-parallel regions as named forward/backward pairs (Megatron mappings.py). Each
// pair is the same communication models::TpComm tags in the op graph, so the cost
// model charges exactly what the runtime issues. Buffers are token rows (rows, C):
// "local" rows are N / tp with sequence parallelism and N without.
//
//   copy_to_region              forward: identity        backward: all-reduce      (CopyForwardAllReduceBackward)
//   reduce_from_region          forward: all-reduce      backward: identity        (AllReduceForwardCopyBackward)
//   gather_from_sp_region       forward: all-gather      backward: reduce-scatter  (AllGatherForwardReduceScatterBackward)
//   reduce_scatter_to_sp_region forward: reduce-scatter  backward: all-gather      (ReduceScatterForwardAllGatherBackward)
//
// The column-parallel input and row-parallel output of each block use the first two
// without sequence parallelism and the last two with it (enter_column_* / exit_row_*).
#pragma once
#include <cstddef>

#include "kernels/backend.h"
#include "models/op.h"

namespace strata::runtime {

// This rank's tensor-parallel group. comm == nullptr means one rank (tp = 1).
struct TpGroup {
  kernels::Communicator* comm = nullptr;
  int size = 1;
  int rank = 0;
  bool sequence_parallel = false;
};

namespace tp {

// Plain collectives over the group (no-ops on one rank). double buffers are allowed on
// one rank only (the float64 gradient checks); more ranks throw InternalError.
template <typename T> void all_reduce_sum(const TpGroup& g, T* data, std::size_t n);
template <typename T> void all_gather(const TpGroup& g, T* out, const T* in, std::size_t n_per_rank);
template <typename T> void reduce_scatter_sum(const TpGroup& g, T* out, const T* in, std::size_t n_per_rank);

// copy_to_region: forward identity (out = in), backward all-reduce of the gradient (in place).
template <typename T> void copy_to_region_forward(const TpGroup& g, T* out, const T* in, std::size_t n);
template <typename T> void copy_to_region_backward(const TpGroup& g, T* grad, std::size_t n);
// reduce_from_region: forward all-reduce (in place), backward identity (out = in).
template <typename T> void reduce_from_region_forward(const TpGroup& g, T* data, std::size_t n);
template <typename T> void reduce_from_region_backward(const TpGroup& g, T* grad_out, const T* grad_in, std::size_t n);
// gather_from_sp_region: forward all-gather of n-value shards into out (tp*n), backward
// reduce-scatter of grad_full (tp*n) into grad_local (n).
template <typename T> void gather_from_sp_region_forward(const TpGroup& g, T* out, const T* in, std::size_t n);
template <typename T> void gather_from_sp_region_backward(const TpGroup& g, T* grad_local, const T* grad_full, std::size_t n);
// reduce_scatter_to_sp_region: forward reduce-scatter of in (tp*n) into out (n), backward
// all-gather of grad_local (n) into grad_full (tp*n).
template <typename T> void reduce_scatter_to_sp_region_forward(const TpGroup& g, T* out, const T* in, std::size_t n);
template <typename T> void reduce_scatter_to_sp_region_backward(const TpGroup& g, T* grad_full, const T* grad_local, std::size_t n);

// Entering a column-parallel layer: local (Nl*C) -> full (N*C) input of the GEMM.
// Without SP copy_to_region, with SP gather_from_sp_region. `local_n` = Nl*C.
template <typename T> void enter_column_forward(const TpGroup& g, T* full, const T* local, std::size_t local_n);
// grad_full (N*C) is consumed (it may be reduced in place); grad_local receives Nl*C.
template <typename T> void enter_column_backward(const TpGroup& g, T* grad_local, T* grad_full, std::size_t local_n);
// Leaving a row-parallel layer: partial sums (N*C) -> local (Nl*C). Without SP
// reduce_from_region, with SP reduce_scatter_to_sp_region. `partial` may be reduced in place.
template <typename T> void exit_row_forward(const TpGroup& g, T* local, T* partial, std::size_t local_n);
template <typename T> void exit_row_backward(const TpGroup& g, T* grad_full, const T* grad_local, std::size_t local_n);

inline models::TpComm enter_column_tag(const TpGroup& g) {
  return g.sequence_parallel ? models::TpComm::AllGatherForwardReduceScatterBackward
                             : models::TpComm::CopyForwardAllReduceBackward;
}
inline models::TpComm exit_row_tag(const TpGroup& g) {
  return g.sequence_parallel ? models::TpComm::ReduceScatterForwardAllGatherBackward
                             : models::TpComm::AllReduceForwardCopyBackward;
}

}  // namespace tp
}  // namespace strata::runtime
