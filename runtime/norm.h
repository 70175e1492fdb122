// Normalization layers over the last dimension of x (N, C): LayerNorm (GPT) and
// RMSNorm (Llama), forward and backward side by side (llm.c layernorm.cuh style).
// Backward functions *accumulate*: dx += ..., dw += ..., db += ... .
#pragma once
#include <cstddef>

namespace strata::runtime {

inline constexpr double kNormEps = 1e-5;

// y (N, C) = (x - mean) * rstd * w + b; saves mean (N) and rstd (N).
template <typename T>
void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* w, const T* b,
                       std::size_t n_rows, std::size_t c);
template <typename T>
void layernorm_backward(T* dx, T* dw, T* db, const T* dy, const T* x, const T* mean,
                        const T* rstd, const T* w, std::size_t n_rows, std::size_t c);

// y (N, C) = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps); saves rstd (N).
template <typename T>
void rmsnorm_forward(T* y, T* rstd, const T* x, const T* w, std::size_t n_rows, std::size_t c);
template <typename T>
void rmsnorm_backward(T* dx, T* dw, const T* dy, const T* x, const T* rstd, const T* w,
                      std::size_t n_rows, std::size_t c);

}  // namespace strata::runtime
