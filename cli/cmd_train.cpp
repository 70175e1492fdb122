// `strata train`: runs a plan with the CPU runtime under MPI
// (`mpirun -np N strata train --plan plan.yaml`), or a one-GPU plan on a CUDA GPU
// (--backend cuda). The flags, the plan and what the job reads from the plan's cluster are
// here; the job itself (set-up agreed on by every rank, the steps, checkpoints, metrics, how
// a one-rank failure ends the job) is runtime/train_job.h and runtime/train_cuda_job.h.
// Input errors found before training starts are the same on every rank, so they propagate
// to main.cpp, which prints the one `error:` line on rank 0 only.
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "common/output_file.h"
#include "common/errors.h"
#include "costmodel/cluster_spec.h"
#include "kernels/backend.h"
#include "planner/plan.h"
#include "planner/plan_recompute.h"
#include "runtime/checkpoint.h"
#include "runtime/train_cuda_job.h"
#include "runtime/train_job.h"

namespace strata::cli {

namespace {

struct TrainOptions {
  std::string plan;
  std::int64_t steps = 10;
  std::uint64_t seed = 1234;
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1, grad_clip = 1.0;
  std::string lr_schedule = "constant";
  std::int64_t warmup_steps = 0;
  std::optional<double> min_lr;             // default lr / 10
  std::optional<std::int64_t> decay_steps;  // default --steps
  bool synthetic = false;
  std::string data, text, metrics;
  std::string checkpoint_dir;
  std::int64_t checkpoint_every = 0;
  bool resume = false;
  std::int64_t log_every = 1;
  std::int64_t grad_bucket_params = 0;
  bool no_overlap_grad_reduce = false;
  bool no_zero_prefetch = false;
  std::string cp_kv_exchange = "ring";
  std::int64_t die_at_step = 0;  // hidden: SIGKILL rank die_rank before this step
  std::int64_t throw_at_step = 0;  // hidden: InputError on rank die_rank before this step
  int die_rank = 1;
  std::string grad_norms;        // hidden: per-parameter gradient norms of the first step
  std::string backend = "cpu";
  std::string gemm_dtype = "bf16";  // --backend cuda
  std::set<std::string> given;      // path flags present on the command line
};

runtime::TrainConfig make_config(const TrainOptions& o) {
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
  runtime::TrainConfig c;
  c.steps = o.steps;
  c.seed = o.seed;
  c.adamw.lr = o.lr;
  c.adamw.beta1 = o.beta1;
  c.adamw.beta2 = o.beta2;
  c.adamw.eps = o.eps;
  c.adamw.weight_decay = o.weight_decay;
  c.lr_schedule.decay = runtime::lr_decay_from_string(o.lr_schedule);
  c.lr_schedule.warmup = o.warmup_steps;
  c.lr_schedule.min = o.min_lr.value_or(o.lr / 10);
  c.lr_schedule.decay_steps = o.decay_steps.value_or(o.steps);
  c.lr_schedule.validate(o.lr);
  c.grad_clip = o.grad_clip;
  if (!o.data.empty()) {
    c.data = runtime::DataKind::TokenFile;
    c.data_path = o.data;
  } else if (!o.text.empty()) {
    c.data = runtime::DataKind::TextFile;
    c.data_path = o.text;
  }
  c.checkpoint_dir = o.checkpoint_dir;
  c.checkpoint_every = o.checkpoint_every;
  c.resume = o.resume;
  c.grad_bucket_params = o.grad_bucket_params;
  c.overlap_grad_reduce = !o.no_overlap_grad_reduce;
  c.zero_prefetch = !o.no_zero_prefetch;
  c.cp_kv_exchange = runtime::cp_kv_exchange_from_string(o.cp_kv_exchange, "--cp-kv-exchange");
  return c;
}

void train(const TrainOptions& o) {
  // Before MPI: flags and the plan (the same on every rank).
  runtime::TrainJob job;
  job.cfg = make_config(o);
  // Names the run in its metrics lines and checkpoints (a resumed run keeps its first id).
  job.cfg.run_id = runtime::new_run_id();
  job.plan = prefixed("--plan", [&] { return planner::load_plan(o.plan); });
  planner::require_valid(job.plan.strategy, job.plan.model);
  if (job.plan.strategy.precision == "fp8")
    input_error("--plan: strategy.precision fp8: strata train does not run FP8 GEMMs (the CPU "
                "runtime is fp32, the CUDA runtime takes --gemm-dtype); remove the key to train "
                "the same layout");
  job.plan_path = o.plan;
  job.plan_note = planner::recompute_plan_prediction(job.plan, "--plan " + o.plan);
  job.metrics_path = o.metrics;
  job.log_every = o.log_every;
  job.die_at_step = o.die_at_step;
  job.throw_at_step = o.throw_at_step;
  job.die_rank = o.die_rank;
  job.grad_norms_path = o.grad_norms;
  // The plan's device (absent when its cluster is no longer in the catalog): the CUDA job's
  // MFU peak (-1: none) and the workspace reserve its memory prediction includes (0: none).
  const std::optional<costmodel::DeviceProfile> device = costmodel::try_load_cluster_device(job.plan.cluster);
  if (kernels::backend_from_string(o.backend) == kernels::Backend::Cuda) {
    double peak = -1;  // a dtype the device lists no peak for: no MFU
    try {
      if (device) peak = device->peak_flops(costmodel::dtype_from_string(o.gemm_dtype));
    } catch (const InputError&) {
    }
    return runtime::run_cuda_training_job(job, o.gemm_dtype, peak);
  }
  if (o.gemm_dtype != "bf16") input_error("--gemm-dtype is for --backend cuda (the CPU runtime is fp32)");
  job.device_reserve_gib = device ? device->reserve_gib : 0;
  runtime::run_training_job(job);
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto opts = std::make_shared<TrainOptions>();
  auto* cmd = app.add_subcommand(
      "train", "train a plan's model with its DP/TP/PP layout on CPU ranks (mpirun -np N strata train ...), "
              "or a one-GPU plan on a CUDA GPU (--backend cuda)");
  add_files_help(*cmd, "--plan, --data or --text, the checkpoints in --checkpoint-dir (with --resume)",
                 "--metrics (one JSON line per step), checkpoints in --checkpoint-dir (a folder it locks)");
  cmd->add_option("--plan", opts->plan, "plan file (YAML) from `strata plan --out` or `strata simulate --out`")
      ->required();
  cmd->add_option("--steps", opts->steps, "optimizer steps to train to (default 10)");
  cmd->add_option("--backend", opts->backend,
                  "cpu (MPI ranks, the plan's layout) or cuda (one GPU, a plan with dp = tp = pp = 1; "
                  "built when CUDA was found) (default cpu)");
  cmd->add_option("--gemm-dtype", opts->gemm_dtype,
                  "--backend cuda: GEMM operand type bf16, tf32 or fp32 (fp32 accumulate; default bf16)");
  cmd->add_option("--seed", opts->seed, "seed of the weights and the synthetic data (default 1234)");
  cmd->add_option("--lr", opts->lr, "AdamW learning rate; the peak of --lr-schedule (default 1e-3)");
  cmd->add_option("--lr-schedule", opts->lr_schedule,
                  "constant, linear or cosine: after the warm-up, decay to --min-lr by --decay-steps (default constant)");
  cmd->add_option("--warmup-steps", opts->warmup_steps, "steps of linear warm-up from 0 to --lr (default 0)");
  cmd->add_option("--min-lr", opts->min_lr, "learning rate at the end of the decay (default --lr / 10)");
  cmd->add_option("--decay-steps", opts->decay_steps, "step at which the decay reaches --min-lr (default --steps)");
  cmd->add_option("--beta1", opts->beta1, "AdamW beta1 (default 0.9)");
  cmd->add_option("--beta2", opts->beta2, "AdamW beta2 (default 0.95)");
  cmd->add_option("--eps", opts->eps, "AdamW epsilon (default 1e-8)");
  cmd->add_option("--weight-decay", opts->weight_decay, "AdamW decoupled weight decay on matrices (default 0.1)");
  cmd->add_option("--grad-clip", opts->grad_clip, "clip the global gradient norm to this (default 1.0, 0 = off)");
  auto* syn = cmd->add_flag("--synthetic", opts->synthetic, "seeded synthetic token sequences (the default)");
  auto* data = cmd->add_option("--data", opts->data, "token file (format in runtime/data_loader.h)");
  auto* text = cmd->add_option("--text", opts->text, "text file, tokenized as bytes (vocab >= 256)");
  syn->excludes(data)->excludes(text);
  data->excludes(text);
  cmd->add_option("--metrics", opts->metrics, "write one JSON line per step to this file (rank 0)");
  cmd->add_option("--checkpoint-dir", opts->checkpoint_dir, "folder for sharded checkpoints");
  cmd->add_option("--checkpoint-every", opts->checkpoint_every,
                  "save every K steps (and at the last step) when --checkpoint-dir is given");
  cmd->add_flag("--resume", opts->resume, "continue from the latest complete checkpoint in --checkpoint-dir");
  cmd->add_option("--grad-bucket-params", opts->grad_bucket_params,
                  "parameters per data-parallel gradient bucket (default max(40M, 1M x dp), "
                  "Megatron's, which the plan's prediction assumes)");
  cmd->add_option("--cp-kv-exchange", opts->cp_kv_exchange,
                  "context parallel (a plan with cp > 1): how attention reaches the other ranks' "
                  "keys/values: ring (passed around the CP ring, online softmax; default) or "
                  "all-gather")
      ->check(CLI::IsMember({"ring", "all-gather"}));
  cmd->add_flag("--no-overlap-grad-reduce", opts->no_overlap_grad_reduce,
                "reduce data-parallel gradients after the backward pass instead of bucket by "
                "bucket during it");
  cmd->add_flag("--no-zero-prefetch", opts->no_zero_prefetch,
                "ZeRO-3: all-gather each layer group's parameters when it runs instead of during "
                "the previous group's compute (the stack's zero_prefetch off)");
  cmd->add_option("--log-every", opts->log_every, "print a step line every K steps (default 1)");
  cmd->add_option("--debug-die-at-step", opts->die_at_step, "test hook: SIGKILL one rank before this step")
      ->group("");
  cmd->add_option("--debug-throw-at-step", opts->throw_at_step,
                  "test hook: an error on one rank before this step (the job must end)")
      ->group("");
  cmd->add_option("--debug-die-rank", opts->die_rank, "test hook: the rank those hooks hit")
      ->group("");
  cmd->add_option("--debug-grad-norms", opts->grad_norms,
                  "test hook: write the first step's per-parameter gradient norms (JSON)")
      ->group("");
  cmd->callback([opts, cmd] {
    for (const char* flag : {"--metrics", "--checkpoint-dir"})
      if (cmd->count(flag) > 0) opts->given.insert(flag);
    train(*opts);
  });
}

}  // namespace strata::cli
