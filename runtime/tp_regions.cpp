#include "runtime/tp_regions.h"

#include <algorithm>
#include <type_traits>

#include "common/errors.h"

namespace strata::runtime::tp {

namespace {

template <typename T>
kernels::Communicator& float_comm(const TpGroup& g) {
  if constexpr (!std::is_same_v<T, float>) {
    throw InternalError("tensor-parallel collectives on double buffers need tp = 1");
  } else {
    STRATA_CHECK(g.comm != nullptr, "tp group of size {} has no communicator", g.size);
    return *g.comm;
  }
}

// A collective between the full buffer and the ranks' shards of `n_per_rank` elements
// (`collective` gets the communicator, out, in, n_per_rank): a group of one only copies.
template <typename T, typename Collective>
void shard_collective(const TpGroup& g, T* out, const T* in, std::size_t n_per_rank, Collective&& collective) {
  if (g.size == 1) {
    if (out != in) std::copy_n(in, n_per_rank, out);
    return;
  }
  if constexpr (std::is_same_v<T, float>) collective(float_comm<T>(g), out, in, n_per_rank);
  else float_comm<T>(g);
}

}  // namespace

template <typename T>
void all_reduce_sum(const TpGroup& g, T* data, std::size_t n) {
  if (g.size == 1 || n == 0) return;
  if constexpr (std::is_same_v<T, float>) float_comm<T>(g).all_reduce_sum(data, n);
  else float_comm<T>(g);
}

template <typename T>
void all_gather(const TpGroup& g, T* out, const T* in, std::size_t n_per_rank) {
  shard_collective(g, out, in, n_per_rank, [](kernels::Communicator& c, float* o, const float* i, std::size_t n) {
    c.all_gather(i, o, n);
  });
}

template <typename T>
void reduce_scatter_sum(const TpGroup& g, T* out, const T* in, std::size_t n_per_rank) {
  shard_collective(g, out, in, n_per_rank, [](kernels::Communicator& c, float* o, const float* i, std::size_t n) {
    c.reduce_scatter_sum(i, o, n);
  });
}

template <typename T>
void copy_to_region_forward(const TpGroup&, T* out, const T* in, std::size_t n) {
  if (out != in) std::copy_n(in, n, out);
}
template <typename T>
void copy_to_region_backward(const TpGroup& g, T* grad, std::size_t n) {
  all_reduce_sum(g, grad, n);
}

template <typename T>
void reduce_from_region_forward(const TpGroup& g, T* data, std::size_t n) {
  all_reduce_sum(g, data, n);
}
template <typename T>
void reduce_from_region_backward(const TpGroup&, T* grad_out, const T* grad_in, std::size_t n) {
  if (grad_out != grad_in) std::copy_n(grad_in, n, grad_out);
}

template <typename T>
void gather_from_sp_region_forward(const TpGroup& g, T* out, const T* in, std::size_t n) {
  all_gather(g, out, in, n);
}
template <typename T>
void gather_from_sp_region_backward(const TpGroup& g, T* grad_local, const T* grad_full, std::size_t n) {
  reduce_scatter_sum(g, grad_local, grad_full, n);
}

template <typename T>
void reduce_scatter_to_sp_region_forward(const TpGroup& g, T* out, const T* in, std::size_t n) {
  reduce_scatter_sum(g, out, in, n);
}
template <typename T>
void reduce_scatter_to_sp_region_backward(const TpGroup& g, T* grad_full, const T* grad_local, std::size_t n) {
  all_gather(g, grad_full, grad_local, n);
}

template <typename T>
void enter_column_forward(const TpGroup& g, T* full, const T* local, std::size_t local_n) {
  if (g.sequence_parallel) gather_from_sp_region_forward(g, full, local, local_n);
  else copy_to_region_forward(g, full, local, local_n);
}
template <typename T>
void enter_column_backward(const TpGroup& g, T* grad_local, T* grad_full, std::size_t local_n) {
  if (g.sequence_parallel) {
    gather_from_sp_region_backward(g, grad_local, grad_full, local_n);
  } else {
    copy_to_region_backward(g, grad_full, local_n);
    if (grad_local != grad_full) std::copy_n(grad_full, local_n, grad_local);
  }
}
template <typename T>
void exit_row_forward(const TpGroup& g, T* local, T* partial, std::size_t local_n) {
  if (g.sequence_parallel) {
    reduce_scatter_to_sp_region_forward(g, local, partial, local_n);
  } else {
    reduce_from_region_forward(g, partial, local_n);
    if (local != partial) std::copy_n(partial, local_n, local);
  }
}
template <typename T>
void exit_row_backward(const TpGroup& g, T* grad_full, const T* grad_local, std::size_t local_n) {
  if (g.sequence_parallel) reduce_scatter_to_sp_region_backward(g, grad_full, grad_local, local_n);
  else reduce_from_region_backward(g, grad_full, grad_local, local_n);
}

#define STRATA_INSTANTIATE(T)                                                                    \
  template void all_reduce_sum<T>(const TpGroup&, T*, std::size_t);                              \
  template void all_gather<T>(const TpGroup&, T*, const T*, std::size_t);                        \
  template void reduce_scatter_sum<T>(const TpGroup&, T*, const T*, std::size_t);                \
  template void copy_to_region_forward<T>(const TpGroup&, T*, const T*, std::size_t);            \
  template void copy_to_region_backward<T>(const TpGroup&, T*, std::size_t);                     \
  template void reduce_from_region_forward<T>(const TpGroup&, T*, std::size_t);                  \
  template void reduce_from_region_backward<T>(const TpGroup&, T*, const T*, std::size_t);       \
  template void gather_from_sp_region_forward<T>(const TpGroup&, T*, const T*, std::size_t);     \
  template void gather_from_sp_region_backward<T>(const TpGroup&, T*, const T*, std::size_t);    \
  template void reduce_scatter_to_sp_region_forward<T>(const TpGroup&, T*, const T*, std::size_t); \
  template void reduce_scatter_to_sp_region_backward<T>(const TpGroup&, T*, const T*, std::size_t); \
  template void enter_column_forward<T>(const TpGroup&, T*, const T*, std::size_t);              \
  template void enter_column_backward<T>(const TpGroup&, T*, T*, std::size_t);                   \
  template void exit_row_forward<T>(const TpGroup&, T*, T*, std::size_t);                        \
  template void exit_row_backward<T>(const TpGroup&, T*, const T*, std::size_t);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

}  // namespace strata::runtime::tp
