#include "runtime/param_spec.h"

#include <cmath>

#include "common/errors.h"

namespace strata::runtime {

std::int64_t ParamSpec::local_rows() const {
  if (row_ranges.empty()) return rows;
  std::int64_t n = 0;
  for (const auto& r : row_ranges) n += r.second;
  return n;
}

std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in (0, 1].
double uniform(std::uint64_t key, std::uint64_t counter) {
  const std::uint64_t bits = splitmix64(key ^ splitmix64(counter));
  return (static_cast<double>(bits >> 11) + 1.0) * 0x1.0p-53;
}

// Standard normal number `index` of the stream `key` (Box-Muller on two uniforms).
double normal(std::uint64_t key, std::uint64_t index) {
  const double u1 = uniform(key, 2 * index), u2 = uniform(key, 2 * index + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace

template <typename T>
void init_param(const ParamSpec& spec, std::uint64_t seed, T* out) {
  STRATA_CHECK(spec.local_cols() <= spec.cols && spec.col_begin + spec.local_cols() <= spec.cols,
               "{}: column range out of bounds", spec.name);
  const std::uint64_t key = splitmix64(seed) ^ fnv1a64(spec.name.data(), spec.name.size());
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges = spec.row_ranges;
  if (ranges.empty()) ranges.emplace_back(0, spec.rows);
  std::int64_t i = 0;
  for (const auto& [begin, count] : ranges) {
    STRATA_CHECK(begin >= 0 && begin + count <= spec.rows, "{}: row range out of bounds", spec.name);
    for (std::int64_t r = begin; r < begin + count; ++r)
      for (std::int64_t c = spec.col_begin; c < spec.col_begin + spec.local_cols(); ++c) {
        double v = 0;
        switch (spec.init) {
          case ParamInit::Zeros: v = 0; break;
          case ParamInit::Ones: v = 1; break;
          case ParamInit::Normal:
            v = spec.init_std * normal(key, static_cast<std::uint64_t>(r * spec.cols + c));
            break;
        }
        out[i++] = static_cast<T>(v);
      }
  }
}

template void init_param<float>(const ParamSpec&, std::uint64_t, float*);
template void init_param<double>(const ParamSpec&, std::uint64_t, double*);

}  // namespace strata::runtime
