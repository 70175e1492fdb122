// Rotary position embedding (RoPE, Su et al. 2021) in the HuggingFace Llama layout
// ("rotate_half": dimension i pairs with i + D/2), applied in place to x (B, H, S, D)
// where the token at sequence index t has position t, or positions[t] when given (a
// context-parallel rank's chunks). Forward and backward side by side.
#pragma once
#include <cstddef>

namespace strata::runtime {

inline constexpr double kRopeBase = 10000.0;

// x[i], x[i+D/2] rotated by angle t * base^(-2i/D). `rows` = B * H.
template <typename T>
void rope_forward(T* x, std::size_t rows, std::size_t seq, std::size_t head_dim,
                  const std::size_t* positions = nullptr);
// The inverse rotation applied to the gradient (the rotation is orthogonal).
template <typename T>
void rope_backward(T* dx, std::size_t rows, std::size_t seq, std::size_t head_dim,
                   const std::size_t* positions = nullptr);

}  // namespace strata::runtime
