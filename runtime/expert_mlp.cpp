#include "runtime/expert_mlp.h"

#include "runtime/activation.h"
#include "runtime/matmul.h"

namespace strata::runtime {

template <typename T>
void ExpertMlp<T>::forward(T* y, const T* x, std::size_t rows, T* h, T* u, T* a) const {
  if (rows == 0) return;
  linear_forward(h, x, gate, static_cast<const T*>(nullptr), rows, hidden, ffn);
  linear_forward(u, x, up, static_cast<const T*>(nullptr), rows, hidden, ffn);
  swiglu_forward(a, h, u, rows * ffn);
  linear_forward(y, a, down, static_cast<const T*>(nullptr), rows, ffn, hidden);
}

template <typename T>
void ExpertMlp<T>::backward(T* dx, const T* dy, const T* x, const T* h, const T* u, const T* a,
                            std::size_t rows) const {
  if (rows == 0) return;
  std::vector<T> da(rows * ffn), dh(rows * ffn), du(rows * ffn);
  linear_backward(da.data(), ddown, static_cast<T*>(nullptr), dy, a, down, rows, ffn, hidden);
  swiglu_backward(dh.data(), du.data(), h, u, da.data(), rows * ffn);
  linear_backward(dx, dgate, static_cast<T*>(nullptr), dh.data(), x, gate, rows, hidden, ffn);
  linear_backward(dx, dup, static_cast<T*>(nullptr), du.data(), x, up, rows, hidden, ffn, /*accumulate_dx=*/true);
}

template struct ExpertMlp<float>;
template struct ExpertMlp<double>;

}  // namespace strata::runtime
