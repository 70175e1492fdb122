#include "runtime/matmul.h"

#include <chrono>

#include "kernels/backend.h"

namespace strata::runtime {

GemmCounter& gemm_counter() {
  static GemmCounter counter;
  return counter;
}

template <>
void gemm<float>(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k,
                 float alpha, const float* a, const float* b, float beta, float* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS rejects a zero leading dimension: C = beta * C by hand
    for (std::size_t i = 0; i < m * n; ++i) c[i] = beta == 0.0f ? 0.0f : beta * c[i];
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  kernels::gemm_f32(trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
  const auto t1 = std::chrono::steady_clock::now();
  GemmCounter& g = gemm_counter();
  g.seconds += std::chrono::duration<double>(t1 - t0).count();
  g.calls += 1;
  g.flops += 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

template <>
void gemm<double>(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k,
                  double alpha, const double* a, const double* b, double beta, double* c) {
  // A(i,p) is a[i*k+p], or a[p*m+i] when transposed; B(p,j) is b[p*n+j], or b[j*k+p].
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::size_t p = 0; p < k; ++p) {
        const double av = trans_a ? a[p * m + i] : a[i * k + p];
        const double bv = trans_b ? b[j * k + p] : b[p * n + j];
        acc += av * bv;
      }
      double& out = c[i * n + j];
      out = alpha * acc + (beta == 0.0 ? 0.0 : beta * out);
    }
  }
}

template <typename T>
void linear_forward(T* y, const T* x, const T* w, const T* b, std::size_t n_rows,
                    std::size_t in, std::size_t out) {
  // y (N, OC) = x (N, IC) @ W^T (IC, OC)
  gemm<T>(false, true, n_rows, out, in, T(1), x, w, T(0), y);
  if (b != nullptr) {
    for (std::size_t r = 0; r < n_rows; ++r) {
      T* yr = y + r * out;
      for (std::size_t o = 0; o < out; ++o) yr[o] += b[o];
    }
  }
}

template <typename T>
void linear_backward(T* dx, T* dw, T* db, const T* dy, const T* x, const T* w,
                     std::size_t n_rows, std::size_t in, std::size_t out, bool accumulate_dx) {
  // dx (N, IC) = dy (N, OC) @ W (OC, IC)
  if (dx != nullptr) gemm<T>(false, false, n_rows, in, out, T(1), dy, w, accumulate_dx ? T(1) : T(0), dx);
  // dW (OC, IC) += dy^T (OC, N) @ x (N, IC)
  if (dw != nullptr) gemm<T>(true, false, out, in, n_rows, T(1), dy, x, T(1), dw);
  if (db != nullptr) {
    for (std::size_t r = 0; r < n_rows; ++r) {
      const T* dyr = dy + r * out;
      for (std::size_t o = 0; o < out; ++o) db[o] += dyr[o];
    }
  }
}

template void linear_forward<float>(float*, const float*, const float*, const float*, std::size_t,
                                    std::size_t, std::size_t);
template void linear_forward<double>(double*, const double*, const double*, const double*,
                                     std::size_t, std::size_t, std::size_t);
template void linear_backward<float>(float*, float*, float*, const float*, const float*,
                                     const float*, std::size_t, std::size_t, std::size_t, bool);
template void linear_backward<double>(double*, double*, double*, const double*, const double*,
                                      const double*, std::size_t, std::size_t, std::size_t, bool);

}  // namespace strata::runtime
