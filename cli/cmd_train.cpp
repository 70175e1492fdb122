// `strata train`: runs a plan with the CPU runtime under MPI
// (`mpirun -np N strata train --plan plan.yaml`), or a one-GPU plan on a CUDA GPU
// (--backend cuda). The flags, the plan and what the job reads from the plan's cluster are
// here; the job itself (set-up agreed on by every rank, the steps, checkpoints, metrics, how
// a one-rank failure ends the job) is runtime/train_job.h and runtime/train_cuda_job.h.
// Input errors found before training starts are the same on every rank, so they propagate
// to main.cpp, which prints the one `error:` line on rank 0 only.
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "common/errors.h"
#include "costmodel/cluster_spec.h"
#include "kernels/backend.h"
#include "planner/plan.h"
#include "planner/plan_recompute.h"
#include "runtime/checkpoint.h"
#include "runtime/train_cuda_job.h"
#include "runtime/train_job.h"
#include "runtime/train_settings.h"

namespace strata::cli {

namespace {

// The flags that configure the run are runtime::TrainSettings (checked by
// runtime::train_config); the rest choose the backend or are test hooks.
struct TrainOptions : runtime::TrainSettings {
  bool synthetic = false;
  std::int64_t die_at_step = 0;  // hidden: SIGKILL rank die_rank before this step
  std::int64_t throw_at_step = 0;  // hidden: InputError on rank die_rank before this step
  int die_rank = 1;
  std::string backend = "cpu";
  std::string gemm_dtype = "bf16";  // --backend cuda
};

void train(const TrainOptions& o) {
  // Before MPI: flags and the plan (the same on every rank).
  runtime::TrainJob job;
  job.cfg = runtime::train_config(o);
  // Names the run in its metrics lines and checkpoints (a resumed run keeps its first id).
  job.cfg.run_id = runtime::new_run_id();
  job.plan = prefixed("--plan", [&] { return planner::load_plan(o.plan); });
  planner::require_valid(job.plan.strategy, job.plan.model);
  if (job.plan.strategy.precision == "fp8")
    input_error("--plan: strategy.precision fp8: strata train does not run FP8 GEMMs (the CPU "
                "runtime is fp32, the CUDA runtime takes --gemm-dtype); remove the key to train "
                "the same layout");
  job.plan_path = o.plan;
  // A plan whose cluster is gone is recomputed for this host, where the CPU runtime runs.
  const bool on_cpu = kernels::backend_from_string(o.backend) != kernels::Backend::Cuda;
  job.plan_note = planner::recompute_plan_prediction(job.plan, "--plan " + o.plan, on_cpu ? "local-cpu" : "");
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
  // The CPU runtime is fp32 whatever the plan says: a bf16 or fp16 plan, or one made for a
  // GPU, runs its layout here, but its stored step time and memory describe another run.
  const std::string precision = job.plan.strategy.precision.empty() ? "the device's" : job.plan.strategy.precision;
  const bool plan_is_fp32_cpu = device && device->compute_dtype == costmodel::DType::Fp32 &&
                                (job.plan.strategy.precision.empty() || job.plan.strategy.precision == "fp32");
  if (!plan_is_fp32_cpu) {
    // Rank 0 prints it in the job header (every rank runs this function).
    job.plan_note += fmt::format("{}made for {} ({}) in {} precision; the CPU runtime trains the same layout "
                                 "in fp32, so its loss, memory and step time are not the plan's predicted ones",
                                 job.plan_note.empty() ? "" : "; ", job.plan.cluster,
                                 device ? device->name : "a device not in the catalog", precision);
  }
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
