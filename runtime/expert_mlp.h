// ExpertMlp: one routed expert, a SwiGLU MLP on the rows routed to it (Mixtral's
// MixtralBlockSparseTop2MLP, Qwen-MoE's and DeepSeek's expert MLP):
//   y (R, C) = ( silu(x Wg^T) * (x Wu^T) ) Wd^T,  Wg, Wu (F, C), Wd (C, F).
// Whole on its rank, or with expert tensor parallel its slice of the FFN width: F is then
// expert_ffn / etp and y a partial sum the etp group adds up. Any number of rows, 0 included.
#pragma once
#include <cstddef>
#include <vector>

namespace strata::runtime {

template <typename T>
struct ExpertMlp {
  const T *gate = nullptr, *up = nullptr, *down = nullptr;  // (F, C), (F, C), (C, F)
  T *dgate = nullptr, *dup = nullptr, *ddown = nullptr;     // gradients, accumulated
  std::size_t hidden = 0, ffn = 0;                          // C, F

  // y (rows, C) from x (rows, C); keeps h = x Wg^T, u = x Wu^T, a = silu(h) * u (rows, F).
  void forward(T* y, const T* x, std::size_t rows, T* h, T* u, T* a) const;
  // dx (rows, C) (overwritten) from dy (rows, C); accumulates dWg, dWu, dWd.
  void backward(T* dx, const T* dy, const T* x, const T* h, const T* u, const T* a,
                std::size_t rows) const;
};

}  // namespace strata::runtime
