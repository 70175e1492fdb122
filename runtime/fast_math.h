// exp for the runtime's float kernels (GELU, SwiGLU, softmax, cross-entropy) written so
// the compiler vectorizes the loops that call it: no library call, no branch. libm's
// expf is a call per element, which kept those loops scalar (GELU alone was a fifth of a
// CPU training step). Range reduction x = n ln2 + r, |r| <= ln2/2, then the degree-6
// Taylor polynomial of e^r (truncation error r^7/7! < 1.2e-7 relative, about 1 ulp), times
// 2^n built in the exponent bits. Inputs are clamped to [-87, 88]: e^-87 ~ 1.6e-38 stands
// in for 0 (softmax and GELU use e^x only relative to 1) and e^88 stays finite.
// double keeps std::exp: the float64 gradient checks compare against exact math.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace strata::runtime {

inline float fast_expf(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;  // ln 2 split so n * kLn2Hi is exact
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;   // 1.5 * 2^23: adding it rounds to an integer
  const float n = (x * kLog2e + kRound) - kRound;
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
  return p * std::bit_cast<float>(bits);
}

template <typename T>
inline T fast_exp(T x) {
  if constexpr (std::is_same_v<T, float>) return fast_expf(x);
  else return std::exp(x);
}

}  // namespace strata::runtime
