// LrSchedule: the learning rate of each optimizer step, as Megatron-LM and nanoGPT run
// it: a linear warm-up from 0 to the peak (AdamWConfig::lr) over `warmup` steps, then a
// decay to `min`
// over the steps up to `decay_steps` (constant, linear or cosine), then `min`. A pure
// function of the step, so a resumed run continues the exact schedule.
#pragma once
#include <cstdint>
#include <string>

namespace strata::runtime {

enum class LrDecay { Constant, Linear, Cosine };
const char* to_string(LrDecay d);
LrDecay lr_decay_from_string(const std::string& s);  // InputError naming --lr-schedule

struct LrSchedule {
  LrDecay decay = LrDecay::Constant;
  double min = 0;                   // reached at decay_steps (linear / cosine)
  std::int64_t warmup = 0;          // steps of linear warm-up (step w has peak * w / warmup)
  std::int64_t decay_steps = 0;     // last step of the decay (>= warmup)

  // InputError (naming the strata train flag) for peak <= 0, min outside [0, peak],
  // negative warm-up, or decay_steps < warmup with a decaying schedule.
  void validate(double peak) const;
  // Learning rate of step `step` (counts from 1) for a peak rate `peak`.
  double at(std::int64_t step, double peak) const;
};

}  // namespace strata::runtime
