// RowParallelLinear: y = x W^T + b with W (out, in) split by input columns over the
// tensor-parallel group. Each rank multiplies its in_local slice of x and the partial
// sums leave the region through tp::exit_row_* (all-reduce, or reduce-scatter to the
// sequence-parallel shard); the bias is added once, after the reduction.
#pragma once
#include <cstddef>
#include <vector>

#include "runtime/matmul.h"
#include "runtime/tp_regions.h"

namespace strata::runtime {

template <typename T>
struct RowParallelLinear {
  const T* w = nullptr;  // (out, in_local)
  const T* b = nullptr;  // (out) or null, replicated
  T* dw = nullptr;
  T* db = nullptr;
  std::size_t in_local = 0, out = 0;

  // y_local (local_rows, out) = reduce(x (rows, in_local) W^T) + b
  void forward(const TpGroup& g, T* y_local, const T* x, std::size_t rows,
               std::size_t local_rows) const {
    std::vector<T> partial(rows * out);
    linear_forward<T>(partial.data(), x, w, nullptr, rows, in_local, out);
    tp::exit_row_forward(g, y_local, partial.data(), local_rows * out);
    if (b != nullptr)
      for (std::size_t r = 0; r < local_rows; ++r)
        for (std::size_t o = 0; o < out; ++o) y_local[r * out + o] += b[o];
  }
  // dx (rows, in_local) = dy_full W; dW += dy_full^T x; db += sum dy_local
  // (with sequence parallelism db covers this rank's tokens only: sp_partial_grad).
  void backward(const TpGroup& g, T* dx, const T* dy_local, const T* x, std::size_t rows,
                std::size_t local_rows) const {
    if (db != nullptr)
      for (std::size_t r = 0; r < local_rows; ++r)
        for (std::size_t o = 0; o < out; ++o) db[o] += dy_local[r * out + o];
    std::vector<T> dy_full(rows * out);
    tp::exit_row_backward(g, dy_full.data(), dy_local, local_rows * out);
    linear_backward<T>(dx, dw, nullptr, dy_full.data(), x, w, rows, in_local, out);
  }
};

}  // namespace strata::runtime
