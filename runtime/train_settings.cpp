#include "runtime/train_settings.h"

#include <cmath>
#include <utility>

#include "common/errors.h"
#include "common/output_file.h"

namespace strata::runtime {

namespace {

// Every check of the flags, in the order the user meets them.
void check_settings(const TrainSettings& o) {
  if (o.steps < 0) input_error("--steps ({}) must be >= 0", o.steps);
  // inf and nan pass the range checks below (nan fails every comparison, inf is > 0):
  // refuse them first, by name.
  const std::pair<const char*, std::optional<double>> reals[] = {
      {"--lr", o.lr},       {"--beta1", o.beta1},   {"--beta2", o.beta2},
      {"--eps", o.eps},     {"--weight-decay", o.weight_decay},
      {"--grad-clip", o.grad_clip}, {"--min-lr", o.min_lr}};
  for (const auto& [flag, v] : reals)
    if (v && !std::isfinite(*v)) input_error("{} ({}) must be a finite number", flag, *v);
  // Before anything is opened: --metrics over the plan or the corpus would destroy it.
  check_path_aliasing({{o.metrics, "--metrics"}, {o.grad_norms, "--debug-grad-norms"}},
                      {{o.plan, "--plan"}, {o.data, "--data"}, {o.text, "--text"}});
  if (!o.resume) check_replaceable(o.metrics, "--metrics");  // a fresh job empties it
  if (o.warmup_steps < 0) input_error("--warmup-steps ({}) must be >= 0", o.warmup_steps);
  if (o.decay_steps && *o.decay_steps < 0) input_error("--decay-steps ({}) must be >= 0", *o.decay_steps);
  const std::pair<const char*, const std::string*> paths[] = {{"--metrics", &o.metrics},
                                                               {"--checkpoint-dir", &o.checkpoint_dir}};
  for (const auto& [flag, path] : paths)
    if (o.given.count(flag) && path->empty()) input_error("{}: expected a path, got an empty string", flag);
  if (!(o.lr > 0)) input_error("--lr ({}) must be > 0", o.lr);
  if (!(o.beta1 >= 0 && o.beta1 < 1)) input_error("--beta1 ({}) must be in [0, 1)", o.beta1);
  if (!(o.beta2 >= 0 && o.beta2 < 1)) input_error("--beta2 ({}) must be in [0, 1)", o.beta2);
  if (!(o.eps > 0)) input_error("--eps ({}) must be > 0", o.eps);
  if (!(o.weight_decay >= 0)) input_error("--weight-decay ({}) must be >= 0", o.weight_decay);
  if (!(o.grad_clip >= 0)) input_error("--grad-clip ({}) must be >= 0 (0 = off)", o.grad_clip);
  if (o.log_every < 1) input_error("--log-every ({}) must be >= 1", o.log_every);
  if (o.grad_bucket_params < 0)
    input_error("--grad-bucket-params ({}) must be >= 1 (or 0 for the default)", o.grad_bucket_params);
  if (o.checkpoint_every < 0) input_error("--checkpoint-every ({}) must be >= 0", o.checkpoint_every);
  if ((o.checkpoint_every > 0 || o.resume) && o.checkpoint_dir.empty())
    input_error("{} needs --checkpoint-dir", o.resume ? "--resume" : "--checkpoint-every");
}

}  // namespace

TrainConfig train_config(const TrainSettings& o) {
  check_settings(o);
  TrainConfig c;
  c.steps = o.steps;
  c.seed = o.seed;
  c.adamw.lr = o.lr;
  c.adamw.beta1 = o.beta1;
  c.adamw.beta2 = o.beta2;
  c.adamw.eps = o.eps;
  c.adamw.weight_decay = o.weight_decay;
  c.lr_schedule.decay = lr_decay_from_string(o.lr_schedule);
  c.lr_schedule.warmup = o.warmup_steps;
  c.lr_schedule.min = o.min_lr.value_or(o.lr / 10);
  c.lr_schedule.decay_steps = o.decay_steps.value_or(o.steps);
  c.lr_schedule.validate(o.lr);
  c.grad_clip = o.grad_clip;
  if (!o.data.empty()) {
    c.data = DataKind::TokenFile;
    c.data_path = o.data;
  } else if (!o.text.empty()) {
    c.data = DataKind::TextFile;
    c.data_path = o.text;
  }
  c.checkpoint_dir = o.checkpoint_dir;
  c.checkpoint_every = o.checkpoint_every;
  c.resume = o.resume;
  c.grad_bucket_params = o.grad_bucket_params;
  c.overlap_grad_reduce = !o.no_overlap_grad_reduce;
  c.zero_prefetch = !o.no_zero_prefetch;
  c.cp_kv_exchange = cp_kv_exchange_from_string(o.cp_kv_exchange, "--cp-kv-exchange");
  return c;
}

}  // namespace strata::runtime
