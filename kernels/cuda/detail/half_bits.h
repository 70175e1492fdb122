// Host-side conversion between float and the 2-byte GEMM types, for building inputs
// and reading results of bf16/fp16 GEMMs without device kernels. float -> bf16/fp16
// rounds to nearest even; the check pattern's values (multiples of 1/8 in [-1, 1])
// convert exactly.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace strata::kernels::detail {

inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

inline float bf16_to_float(std::uint16_t h) {
  std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float half_to_float(std::uint16_t h) {
  const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31) v = man ? NAN : INFINITY;
  else v = std::ldexp(static_cast<float>(man | 0x400), exp - 25);
  return sign ? -v : v;
}

inline std::uint16_t float_to_half(float f) {
  const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  float a = std::fabs(f);
  if (std::isnan(f)) return 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00;  // rounds to infinity
  if (a < std::ldexp(1.0f, -24) / 2) return sign;
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exp = e - 1 + 15;  // biased exponent of a in [1, 2) form
  if (exp <= 0) {  // subnormal: units of 2^-24
    auto q = static_cast<std::uint16_t>(std::nearbyint(std::ldexp(a, 24)));
    return sign | q;
  }
  float scaled = std::ldexp(a, 10 - (e - 1));  // in [1024, 2048)
  auto q = static_cast<std::uint32_t>(std::nearbyint(scaled));
  if (q == 2048) {
    q = 1024;
    ++exp;
  }
  if (exp >= 31) return sign | 0x7c00;
  return static_cast<std::uint16_t>(sign | (exp << 10) | (q & 0x3ff));
}

}  // namespace strata::kernels::detail
