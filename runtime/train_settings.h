// TrainSettings: the values of `strata train`'s flags that say how the run trains (steps,
// optimizer, learning-rate schedule, data, checkpoints, gradient reduction), as given on the
// command line and not yet checked. train_config checks them and builds the TrainConfig, so
// every bad value is refused before a file is opened or a rank is started.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "runtime/train_config.h"

namespace strata::runtime {

struct TrainSettings {
  std::string plan;
  std::int64_t steps = 10;
  std::uint64_t seed = 1234;
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1, grad_clip = 1.0;
  std::string lr_schedule = "constant";
  std::int64_t warmup_steps = 0;
  std::optional<double> min_lr;             // default lr / 10
  std::optional<std::int64_t> decay_steps;  // default --steps
  std::string data, text, metrics;
  std::string checkpoint_dir;
  std::int64_t checkpoint_every = 0;
  bool resume = false;
  std::int64_t log_every = 1;
  std::int64_t grad_bucket_params = 0;
  bool no_overlap_grad_reduce = false;
  bool no_zero_prefetch = false;
  std::string cp_kv_exchange = "ring";
  std::string grad_norms;       // per-parameter gradient norms of the first step (a test hook)
  std::set<std::string> given;  // path flags present on the command line ("--metrics", "--checkpoint-dir")
};

// The run's TrainConfig (run_id left empty). InputError naming the flag for a value out of
// range (a negative --steps, --lr <= 0, a beta outside [0, 1), nan or inf), a path flag given
// an empty string, --checkpoint-every or --resume without --checkpoint-dir, an output
// (--metrics, --debug-grad-norms) that is an input (--plan, --data, --text), or a fresh
// run's --metrics over a file strata did not write.
TrainConfig train_config(const TrainSettings& s);

}  // namespace strata::runtime
