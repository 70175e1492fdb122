// MLP activations, forward and backward side by side: GELU (tanh approximation, as
// GPT-2's "gelu_new") and SwiGLU (silu(gate) * up, Llama). Elementwise over n values.
#pragma once
#include <cstddef>

namespace strata::runtime {

// out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
template <typename T>
void gelu_forward(T* out, const T* x, std::size_t n);
// dx = dout * gelu'(x) (overwrites dx)
template <typename T>
void gelu_backward(T* dx, const T* x, const T* dout, std::size_t n);

// out = silu(gate) * up, silu(g) = g / (1 + exp(-g))
template <typename T>
void swiglu_forward(T* out, const T* gate, const T* up, std::size_t n);
// dgate = dout * up * silu'(gate), dup = dout * silu(gate) (both overwritten)
template <typename T>
void swiglu_backward(T* dgate, T* dup, const T* gate, const T* up, const T* dout, std::size_t n);

}  // namespace strata::runtime
