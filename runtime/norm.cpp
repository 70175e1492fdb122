#include "runtime/norm.h"

#include <cmath>

namespace strata::runtime {

template <typename T>
void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* w, const T* b,
                       std::size_t n_rows, std::size_t c) {
  for (std::size_t r = 0; r < n_rows; ++r) {
    const T* xr = x + r * c;
    T m = 0;
    for (std::size_t i = 0; i < c; ++i) m += xr[i];
    m /= static_cast<T>(c);
    T v = 0;
    for (std::size_t i = 0; i < c; ++i) {
      const T d = xr[i] - m;
      v += d * d;
    }
    v /= static_cast<T>(c);
    const T s = T(1) / std::sqrt(v + static_cast<T>(kNormEps));
    T* yr = y + r * c;
    for (std::size_t i = 0; i < c; ++i) yr[i] = (xr[i] - m) * s * w[i] + b[i];
    mean[r] = m;
    rstd[r] = s;
  }
}

template <typename T>
void layernorm_backward(T* dx, T* dw, T* db, const T* dy, const T* x, const T* mean,
                        const T* rstd, const T* w, std::size_t n_rows, std::size_t c) {
  for (std::size_t r = 0; r < n_rows; ++r) {
    const T* dyr = dy + r * c;
    const T* xr = x + r * c;
    T* dxr = dx + r * c;
    const T m = mean[r], s = rstd[r];
    // xhat = (x - mean) * rstd; dxhat = dy * w
    // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
    T sum_dxhat = 0, sum_dxhat_xhat = 0;
    for (std::size_t i = 0; i < c; ++i) {
      const T xhat = (xr[i] - m) * s;
      const T dxhat = dyr[i] * w[i];
      sum_dxhat += dxhat;
      sum_dxhat_xhat += dxhat * xhat;
    }
    const T mean_dxhat = sum_dxhat / static_cast<T>(c);
    const T mean_dxhat_xhat = sum_dxhat_xhat / static_cast<T>(c);
    for (std::size_t i = 0; i < c; ++i) {
      const T xhat = (xr[i] - m) * s;
      const T dxhat = dyr[i] * w[i];
      db[i] += dyr[i];
      dw[i] += dyr[i] * xhat;
      dxr[i] += s * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat);
    }
  }
}

template <typename T>
void rmsnorm_forward(T* y, T* rstd, const T* x, const T* w, std::size_t n_rows, std::size_t c) {
  for (std::size_t r = 0; r < n_rows; ++r) {
    const T* xr = x + r * c;
    T ss = 0;
    for (std::size_t i = 0; i < c; ++i) ss += xr[i] * xr[i];
    const T s = T(1) / std::sqrt(ss / static_cast<T>(c) + static_cast<T>(kNormEps));
    T* yr = y + r * c;
    for (std::size_t i = 0; i < c; ++i) yr[i] = xr[i] * s * w[i];
    rstd[r] = s;
  }
}

template <typename T>
void rmsnorm_backward(T* dx, T* dw, const T* dy, const T* x, const T* rstd, const T* w,
                      std::size_t n_rows, std::size_t c) {
  for (std::size_t r = 0; r < n_rows; ++r) {
    const T* dyr = dy + r * c;
    const T* xr = x + r * c;
    T* dxr = dx + r * c;
    const T s = rstd[r];
    // y_i = x_i s w_i, s = (mean(x^2) + eps)^-1/2, ds/dx_j = -s^3 x_j / C
    // dx_j = s w_j dy_j - s^3 x_j / C * sum_i dy_i w_i x_i
    T dot = 0;
    for (std::size_t i = 0; i < c; ++i) dot += dyr[i] * w[i] * xr[i];
    const T k = s * s * s * dot / static_cast<T>(c);
    for (std::size_t i = 0; i < c; ++i) {
      dw[i] += dyr[i] * xr[i] * s;
      dxr[i] += s * w[i] * dyr[i] - k * xr[i];
    }
  }
}

#define STRATA_INSTANTIATE(T)                                                                   \
  template void layernorm_forward<T>(T*, T*, T*, const T*, const T*, const T*, std::size_t,     \
                                     std::size_t);                                              \
  template void layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*,       \
                                      const T*, std::size_t, std::size_t);                      \
  template void rmsnorm_forward<T>(T*, T*, const T*, const T*, std::size_t, std::size_t);       \
  template void rmsnorm_backward<T>(T*, T*, const T*, const T*, const T*, const T*, std::size_t, \
                                    std::size_t);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

}  // namespace strata::runtime
