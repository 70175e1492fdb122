#include "runtime/adamw.h"

#include <cmath>

namespace strata::runtime {

void adamw_update(float* p, const float* g, float* m, float* v, std::size_t n,
                  const AdamWConfig& cfg, std::int64_t step, bool decay, float grad_scale) {
  const auto b1 = static_cast<float>(cfg.beta1), b2 = static_cast<float>(cfg.beta2);
  const auto t = static_cast<double>(step);
  const auto c1 = static_cast<float>(1.0 - std::pow(cfg.beta1, t));
  const auto c2 = static_cast<float>(1.0 - std::pow(cfg.beta2, t));
  const auto lr = static_cast<float>(cfg.lr), eps = static_cast<float>(cfg.eps);
  const float wd = decay ? static_cast<float>(cfg.weight_decay) : 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const float gi = g[i] * grad_scale;
    m[i] = b1 * m[i] + (1.0f - b1) * gi;
    v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
    const float mhat = m[i] / c1, vhat = v[i] / c2;
    p[i] -= lr * (mhat / (std::sqrt(vhat) + eps) + wd * p[i]);
  }
}

}  // namespace strata::runtime
