// Expert tensor parallelism (Megatron-Core's expert_tensor_parallel_size, etp): the etp
// ranks of an expert group hold the same experts, each a slice of every expert's FFN
// width (gate and up split by rows, down by columns, as a column- then row-parallel MLP).
// After the ep all-to-all each etp rank holds its own tokens' rows for the experts; the
// rows are all-gathered over the etp group, each rank runs its slice of every expert on
// all of them, and the partial outputs are reduce-scattered back to the rows' owner
// (Megatron-Core's AllToAll dispatcher: all-gather over the expert TP group after the
// all-to-all, reduce-scatter before the combine: megatron/core/transformer/moe/
// token_dispatcher.py, MoEAlltoAllTokenDispatcher, NVIDIA/Megatron-LM at
// d98e8a64ddf34856e74b24714e3bedb2f5a39553). Backward: the all-gather's adjoint is the
// reduce-scatter and vice versa.
#pragma once
#include <cstddef>
#include <vector>

#include "kernels/backend.h"

namespace strata::runtime {

// This rank's expert tensor-parallel group. comm == nullptr means one rank (etp = 1).
struct EtpGroup {
  kernels::Communicator* comm = nullptr;
  int size = 1;
  int rank = 0;
};

// Where the rows of every etp rank go once gathered: each rank's rows arrive expert-major
// (local expert, then arrival); gathered, they are ordered by local expert, then etp rank,
// then arrival, so each expert's rows are contiguous.
struct EtpGather {
  std::vector<std::size_t> rows_per_rank;    // (etp)
  std::vector<std::size_t> rows_per_expert;  // (experts_local), summed over the etp ranks
  // Position in the gathered expert-major order of row i of the rank-major concatenation.
  std::vector<std::size_t> expert_major;

  std::size_t rows() const { return expert_major.size(); }
};

// All-gathers every etp rank's rows per local expert (one small all-gather of counts).
EtpGather plan_etp_gather(const EtpGroup& g, const std::vector<std::size_t>& local_rows_per_expert);

// Forward: `rows` (this rank's rows_per_rank[rank] rows of `width`, expert-major) from
// every etp rank, into `out` (plan.rows() rows, gathered expert-major). double buffers
// only with one rank (the float64 gradient checks).
template <typename T>
void etp_gather_rows(const EtpGroup& g, const EtpGather& plan, const T* rows, std::size_t width,
                     std::vector<T>& out);
// The adjoint: `rows` (plan.rows() partial rows, gathered expert-major) summed over the
// etp ranks; `out` receives this rank's own rows (expert-major).
template <typename T>
void etp_reduce_scatter_rows(const EtpGroup& g, const EtpGather& plan, const T* rows, std::size_t width,
                             std::vector<T>& out);

}  // namespace strata::runtime
