// ColumnParallelLinear: y = x W^T + b with W (out, in) split by output rows over the
// tensor-parallel group; this rank computes out_local columns of y for every token.
// Its input must already be in the column region (tp::enter_column_forward: identity
// without sequence parallelism, all-gather with it), shared by sibling layers (SwiGLU's
// gate and up); the backward returns a partial input gradient that the caller reduces
// with tp::enter_column_backward.
#pragma once
#include <cstddef>

#include "runtime/matmul.h"

namespace strata::runtime {

template <typename T>
struct ColumnParallelLinear {
  const T* w = nullptr;  // (out_local, in)
  const T* b = nullptr;  // (out_local) or null
  T* dw = nullptr;
  T* db = nullptr;
  std::size_t in = 0, out_local = 0;

  // y (N, out_local) = x_full (N, in) W^T + b
  void forward(T* y, const T* x_full, std::size_t rows) const {
    linear_forward(y, x_full, w, b, rows, in, out_local);
  }
  // dx_full (N, in) (+)= dy W (partial over TP ranks); dW += dy^T x; db += sum dy
  void backward(T* dx_full, const T* dy, const T* x_full, std::size_t rows, bool accumulate) const {
    linear_backward(dx_full, dw, db, dy, x_full, w, rows, in, out_local, accumulate);
  }
};

}  // namespace strata::runtime
