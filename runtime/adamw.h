// AdamW (Loshchilov & Hutter 2019, PyTorch's formulation): decoupled weight decay, bias-
// corrected first and second moments. Hyperparameters are fixed for a run (TrainConfig).
#pragma once
#include <cstddef>
#include <cstdint>

namespace strata::runtime {

struct AdamWConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;  // applied to matrices and embeddings only
};

// p -= lr * (wd * p [if decay] + mhat / (sqrt(vhat) + eps)) with m, v updated from
// g * grad_scale; `step` counts from 1.
void adamw_update(float* p, const float* g, float* m, float* v, std::size_t n,
                  const AdamWConfig& cfg, std::int64_t step, bool decay, float grad_scale);

}  // namespace strata::runtime
