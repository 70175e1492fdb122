#include "runtime/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/errors.h"

namespace strata::runtime {

const char* to_string(LrDecay d) {
  switch (d) {
    case LrDecay::Constant: return "constant";
    case LrDecay::Linear: return "linear";
    case LrDecay::Cosine: return "cosine";
  }
  return "constant";
}

LrDecay lr_decay_from_string(const std::string& s) {
  for (LrDecay d : {LrDecay::Constant, LrDecay::Linear, LrDecay::Cosine})
    if (s == to_string(d)) return d;
  input_error("--lr-schedule '{}' is not one of constant, linear, cosine", s);
}

void LrSchedule::validate(double peak) const {
  if (!(peak > 0)) input_error("--lr ({}) must be > 0", peak);
  if (!(min >= 0 && min <= peak)) input_error("--min-lr ({}) must be in [0, --lr = {}]", min, peak);
  if (warmup < 0) input_error("--warmup-steps ({}) must be >= 0", warmup);
  if (decay != LrDecay::Constant && decay_steps < warmup)
    input_error("--decay-steps ({}) must be >= --warmup-steps ({})", decay_steps, warmup);
}

double LrSchedule::at(std::int64_t step, double peak) const {
  if (warmup > 0 && step <= warmup) return peak * static_cast<double>(std::max<std::int64_t>(step, 0)) / warmup;
  if (decay == LrDecay::Constant) return peak;
  if (step >= decay_steps) return min;
  const double progress = static_cast<double>(step - warmup) / static_cast<double>(decay_steps - warmup);
  const double factor = decay == LrDecay::Linear ? 1.0 - progress : 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  return min + (peak - min) * factor;
}

}  // namespace strata::runtime
