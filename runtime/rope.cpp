#include "runtime/rope.h"

#include <cmath>
#include <vector>

namespace strata::runtime {

namespace {

// cos/sin tables (S, D/2), computed in double so float and double models agree.
template <typename T>
void rope_apply(T* x, std::size_t rows, std::size_t seq, std::size_t head_dim, double sign,
                const std::size_t* positions) {
  const std::size_t half = head_dim / 2;
  std::vector<T> cs(seq * half), sn(seq * half);
  for (std::size_t t = 0; t < seq; ++t)
    for (std::size_t i = 0; i < half; ++i) {
      const double inv_freq = std::pow(kRopeBase, -2.0 * static_cast<double>(i) /
                                                      static_cast<double>(head_dim));
      const double angle = static_cast<double>(positions != nullptr ? positions[t] : t) * inv_freq;
      cs[t * half + i] = static_cast<T>(std::cos(angle));
      sn[t * half + i] = static_cast<T>(sign * std::sin(angle));
    }
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t t = 0; t < seq; ++t) {
      T* v = x + (r * seq + t) * head_dim;
      for (std::size_t i = 0; i < half; ++i) {
        const T c = cs[t * half + i], s = sn[t * half + i];
        const T x1 = v[i], x2 = v[i + half];
        v[i] = x1 * c - x2 * s;
        v[i + half] = x2 * c + x1 * s;
      }
    }
}

}  // namespace

template <typename T>
void rope_forward(T* x, std::size_t rows, std::size_t seq, std::size_t head_dim,
                  const std::size_t* positions) {
  rope_apply(x, rows, seq, head_dim, 1.0, positions);
}

template <typename T>
void rope_backward(T* dx, std::size_t rows, std::size_t seq, std::size_t head_dim,
                   const std::size_t* positions) {
  rope_apply(dx, rows, seq, head_dim, -1.0, positions);
}

template void rope_forward<float>(float*, std::size_t, std::size_t, std::size_t, const std::size_t*);
template void rope_forward<double>(double*, std::size_t, std::size_t, std::size_t, const std::size_t*);
template void rope_backward<float>(float*, std::size_t, std::size_t, std::size_t, const std::size_t*);
template void rope_backward<double>(double*, std::size_t, std::size_t, std::size_t, const std::size_t*);

}  // namespace strata::runtime
