// Dense matrix products of the runtime: a row-major GEMM for float (through the
// kernels backend: OpenBLAS on CPU) and for double (a plain loop, used only by the
// float64 gradient checks), and the linear layer y = x W^T + b built on it.
// Shapes follow llm.c: x (N, IC) rows of tokens, W (OC, IC), b (OC), y (N, OC).
#pragma once
#include <cstddef>
#include <cstdint>

namespace strata::runtime {

// C(m,n) = alpha * op(A)(m,k) * op(B)(k,n) + beta * C, row-major, op = transpose when t*.
// Any of m, n, k may be 0.
template <typename T>
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, T alpha,
          const T* a, const T* b, T beta, T* c);

// y (N, OC) = x (N, IC) W^T + b; b may be null.
template <typename T>
void linear_forward(T* y, const T* x, const T* w, const T* b, std::size_t n_rows,
                    std::size_t in, std::size_t out);

// Backward of linear_forward. dx (N, IC) = dy W (or += when accumulate_dx; dx may be
// null to skip); dw (OC, IC) += dy^T x; db (OC) += column sums of dy (db may be null).
template <typename T>
void linear_backward(T* dx, T* dw, T* db, const T* dy, const T* x, const T* w,
                     std::size_t n_rows, std::size_t in, std::size_t out,
                     bool accumulate_dx = false);

// Time spent in float GEMMs by this process (one rank per process), for the step
// log and bench/bench_runtime: seconds, calls and FLOPs (2mnk) since the last reset.
struct GemmCounter {
  double seconds = 0;
  std::int64_t calls = 0;
  double flops = 0;
};
GemmCounter& gemm_counter();

}  // namespace strata::runtime
