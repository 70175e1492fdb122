// `strata train`: runs a plan with the CPU runtime under MPI
// (`mpirun -np N strata train --plan plan.yaml`). Rank 0 prints one line per step and
// writes the metrics JSONL; every rank trains its shard of the plan's layout.
//
// Errors and MPI: input errors found before training starts are the same on every rank
// (the plan, the world size, data files and checkpoints are checked on each rank and the
// ranks agree on any failure before going on), so they propagate to main.cpp, which exits
// 2 on all of them and prints the one `error:` line on rank 0 only. Once training runs, a failure may
// hit one rank only while the others wait in a collective; that rank prints its `error:`
// line here and calls MPI_Abort, which ends every rank of the job (exit 2 for input
// errors, 1 otherwise). A rank killed outright is detected by mpirun, which ends the job.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/rank_grid.h"
#include "kernels/cpu/mpi_communicator.h"
#include "planner/plan.h"
#include "common/json_text.h"
#include "runtime/collective_error.h"
#include "runtime/preflight.h"
#include "runtime/process_grid.h"
#include "runtime/train_cuda.h"
#include "runtime/trainer.h"

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

// Exact bytes, with the MiB beside them for a reader.
std::string byte_text(std::size_t bytes) {
  return fmt::format("{} B ({:.2f} MiB)", bytes, static_cast<double>(bytes) / (1 << 20));
}

std::string data_name(const runtime::TrainConfig& c) {
  switch (c.data) {
    case runtime::DataKind::Synthetic: return "synthetic";
    case runtime::DataKind::TokenFile: return "token file " + c.data_path;
    case runtime::DataKind::TextFile: return "text file " + c.data_path;
  }
  return "?";
}

// One metrics line: the keys DESIGN.md / `strata validate` read, plus grad_norm, lr,
// gemm_s and dp_wait_s (the DP gradient reduction left after the backward pass).
std::string metrics_line(const runtime::StepStats& s, double predicted_s) {
  nlohmann::ordered_json j;
  j["step"] = s.step;
  j["loss"] = s.loss;
  j["step_s"] = s.step_s;
  j["tokens_per_s"] = s.tokens_per_s;
  j["predicted_step_s"] = predicted_s;
  j["grad_norm"] = s.grad_norm;
  j["lr"] = s.lr;
  j["gemm_s"] = s.gemm_s;
  j["dp_wait_s"] = s.dp_wait_s;
  return j.dump() + "\n";
}

[[noreturn]] void abort_job(runtime::ProcessGrid& grid, const char* kind, const std::string& what,
                            int code) {
  std::fflush(stdout);
  if (grid.world_size() > 1) fmt::print(stderr, "error: {}rank {}: {}\n", kind, grid.world_rank(), what);
  else fmt::print(stderr, "error: {}{}\n", kind, what);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return
}

// The workspace reserve the plan's memory prediction includes (its cluster's device);
// 0 when the cluster can no longer be loaded.
double device_reserve_gib(const std::string& cluster) {
  try {
    return costmodel::load_cluster(cluster).device.reserve_gib;
  } catch (const std::exception&) {
    return 0;
  }
}

// MPI ranks that share this host's memory (this one included).
int ranks_on_this_host() {
  MPI_Comm local = MPI_COMM_NULL;
  int n = 1;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) == MPI_SUCCESS &&
      local != MPI_COMM_NULL) {
    MPI_Comm_size(local, &n);
    MPI_Comm_free(&local);
  }
  return n;
}

// Keeps the lines of a metrics file whose step is <= `step` (a line that does not parse,
// such as one cut off by a killed job, is dropped too). Only a regular file is rewritten.
void trim_metrics(const std::string& path, std::int64_t step) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return;
  const std::string text = read_file(path, SIZE_MAX);
  std::string kept;
  std::size_t dropped = 0;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t nl = text.find('\n', at);
    const bool complete = nl != std::string::npos;
    if (!complete) nl = text.size();
    const std::string line = text.substr(at, nl - at);
    at = nl + 1;
    if (line.empty()) continue;
    bool keep = false;
    try {
      const auto j = parse_json(line);
      keep = complete && j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
             j["step"].get<std::int64_t>() <= step;
    } catch (const std::exception&) {
    }
    if (keep) kept += line + "\n";
    else ++dropped;
  }
  if (dropped == 0) return;
  write_file_atomic(path, kept);
  fmt::print("--metrics {}: dropped {} line{} after step {} (the job that wrote them ran past its "
             "last checkpoint)\n", path, dropped, dropped == 1 ? "" : "s", step);
}

// --backend cuda: one process, one GPU (runtime/train_cuda.h).
void train_on_cuda(const TrainOptions& o, const runtime::TrainConfig& cfg, const planner::Plan& plan) {
  kernels::mpi_init_once(nullptr, nullptr);
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world != 1)
    input_error("--backend cuda trains on one GPU in one process; launched with {} ranks (run it "
                "without mpirun)", world);
  if (!o.grad_norms.empty()) input_error("--debug-grad-norms is for --backend cpu");
  runtime::CudaTraining run(plan, cfg, o.gemm_dtype);
  try {  // MFU needs the peak; a plan whose cluster is not in the catalog simply has none
    const costmodel::ClusterSpec cluster = costmodel::load_cluster(plan.cluster);
    run.set_peak_flops(cluster.device.peak_flops(costmodel::dtype_from_string(o.gemm_dtype)));
  } catch (const InputError&) {
    run.set_peak_flops(-1);
  }
  std::ofstream metrics;
  if (!o.metrics.empty()) {
    metrics.open(o.metrics, std::ios::trunc);
    if (!metrics) input_error("--metrics {}: cannot open for writing", o.metrics);
  }
  const planner::Strategy& s = plan.strategy;
  fmt::print("strata train --backend cuda: model {} (layers {}, hidden {}, heads {}, vocab {}, seq {})\n",
             plan.model.name, plan.model.layers, plan.model.hidden, plan.model.heads, plan.model.vocab,
             plan.model.seq_len);
  fmt::print("  device {}\n  micro-batch {} x {}, global batch {} ({} tokens), data {}, seed {}, lr {}, steps {}\n",
             run.describe(), s.micro_batch, s.num_microbatches(), s.global_batch,
             s.global_batch * plan.model.seq_len, data_name(cfg), cfg.seed, cfg.adamw.lr, cfg.steps);
  std::fflush(stdout);
  while (run.step() < cfg.steps) {
    const runtime::StepStats st = run.train_step();
    if (!std::isfinite(st.loss) || !std::isfinite(st.grad_norm))
      throw runtime::TrainingDiverged(fmt::format(
          "step {}: the {} is not finite: training diverged (lower --lr, check --data)", st.step,
          std::isfinite(st.loss) ? "gradient norm" : "loss"));
    if (st.step % o.log_every == 0 || st.step == cfg.steps) {
      const double mfu = run.last_mfu();
      fmt::print("step {:5d}/{} | loss {:.6f} | grad norm {:.4f} | {:8.2f} ms | {:9.0f} tok/s | "
                 "fwd+bwd {:.2f} ms | optimizer {:.2f} ms{}\n",
                 st.step, cfg.steps, st.loss, st.grad_norm, st.step_s * 1e3, st.tokens_per_s,
                 st.gemm_s * 1e3, run.last_optimizer_s() * 1e3,
                 mfu >= 0 ? fmt::format(" | MFU {:.1f}%", 100 * mfu) : "");
      std::fflush(stdout);
    }
    if (metrics.is_open()) {
      metrics << metrics_line(st, plan.prediction.iteration_s);
      metrics.flush();
      if (!metrics) input_error("--metrics {}: write failed", o.metrics);
    }
  }
}

void train(const TrainOptions& o) {
  // Before MPI: flags and the plan (the same on every rank).
  runtime::TrainConfig cfg = make_config(o);
  if (!cfg.checkpoint_dir.empty()) cfg.run_id = runtime::new_run_id();
  const planner::Plan plan = [&] {
    try {
      return planner::load_plan(o.plan);
    } catch (const InputError& e) {
      throw InputError(fmt::format("--plan: {}", e.what()));
    }
  }();
  const planner::Strategy& s = plan.strategy;
  planner::require_valid(s, plan.model);
  if (s.precision == "fp8")
    input_error("--plan: strategy.precision fp8: strata train does not run FP8 GEMMs (the CPU "
                "runtime is fp32, the CUDA runtime takes --gemm-dtype); remove the key to train "
                "the same layout");
  if (kernels::backend_from_string(o.backend) == kernels::Backend::Cuda) {
    train_on_cuda(o, cfg, plan);
    return;
  }
  if (o.gemm_dtype != "bf16") input_error("--gemm-dtype is for --backend cuda (the CPU runtime is fp32)");
  const costmodel::RankGrid rank_grid(s.dp, s.tp, s.pp, s.rank_order, s.cp);

  kernels::mpi_init_once(nullptr, nullptr);
  runtime::ProcessGrid grid(rank_grid, s.ep, s.etp);  // InputError on every rank if the world size differs
  const bool root = grid.world_rank() == 0;
  // Memory pre-flight: every rank checks its own host (ranks sharing it counted once).
  runtime::throw_if_any_rank_failed(grid.world(), runtime::capture_error([&] {
    runtime::check_plan_memory(plan, o.plan, ranks_on_this_host(), runtime::host_memory_gib(),
                               device_reserve_gib(plan.cluster));
  }));

  // Set-up that may fail on some ranks only: agree before anyone continues.
  std::unique_ptr<runtime::Trainer> trainer;
  std::unique_ptr<runtime::CheckpointDirLock> folder_lock;  // held until the job ends
  std::ofstream metrics;
  runtime::throw_if_any_rank_failed(grid.world(), runtime::capture_error([&] {
    // Fail now, not after the first K steps: rank 0 creates and locks the folder, and a
    // fresh run refuses another run's checkpoints.
    if (root && !cfg.checkpoint_dir.empty())
      folder_lock = runtime::claim_checkpoint_dir(cfg.checkpoint_dir, cfg.resume);
    trainer = std::make_unique<runtime::Trainer>(plan, cfg, grid);
  }));
  std::int64_t resumed_at = 0;
  if (cfg.resume) {
    const std::int64_t at = resumed_at = trainer->resume();
    if (root) fmt::print("resumed from {} at step {}{}\n", runtime::checkpoint_step_dir(cfg.checkpoint_dir, at),
                         at, at >= cfg.steps ? fmt::format(" (>= --steps {}: nothing to train)", cfg.steps) : "");
  }
  runtime::throw_if_any_rank_failed(grid.world(), runtime::capture_error([&] {
    if (!root || o.metrics.empty()) return;
    // After --resume the metrics continue from the checkpoint's step: lines of steps the
    // previous job ran past its last checkpoint are dropped, so no step appears twice.
    if (cfg.resume) trim_metrics(o.metrics, resumed_at);
    metrics.open(o.metrics, cfg.resume ? std::ios::app : std::ios::trunc);
    if (!metrics) input_error("--metrics {}: cannot open for writing", o.metrics);
  }));

  if (root) {
    fmt::print("strata train: model {} (layers {}, hidden {}, heads {}, vocab {}, seq {}), {} rank{}\n",
               plan.model.name, plan.model.layers, plan.model.hidden, plan.model.heads,
               plan.model.vocab, plan.model.seq_len, grid.world_size(), grid.world_size() == 1 ? "" : "s");
    fmt::print("  layout dp {} x tp {} x pp {} x cp {}{} (vpp {}, {}), micro-batch {} x {} per rank, global "
               "batch {} ({} tokens), zero {}, recompute {}, sequence parallel {}\n",
               s.dp, s.tp, s.pp,
               s.cp > 1 ? fmt::format("{} ({} K/V)", s.cp, runtime::to_string(cfg.cp_kv_exchange)) : "1",
               plan.model.moe ? fmt::format(", experts over ep {} x edp {} (etp {})", s.ep, s.edp(), s.etp) : "",
               s.vpp, planner::to_string(s.schedule), s.micro_batch,
               s.num_microbatches(), s.global_batch, trainer->tokens_per_step(), s.zero,
               planner::to_string(s.recompute), s.sequence_parallel ? "on" : "off");
    const auto& ls = cfg.lr_schedule;
    const std::string lr_text =
        ls.decay == runtime::LrDecay::Constant && ls.warmup == 0
            ? fmt::format("{}", cfg.adamw.lr)
            : fmt::format("{} ({}{}{})", cfg.adamw.lr, ls.warmup > 0 ? fmt::format("warm-up {} steps", ls.warmup) : "",
                          ls.warmup > 0 && ls.decay != runtime::LrDecay::Constant ? ", " : "",
                          ls.decay == runtime::LrDecay::Constant
                              ? std::string()
                              : fmt::format("{} to {} at step {}", runtime::to_string(ls.decay), ls.min, ls.decay_steps));
    if (s.dp * s.cp > 1 && s.zero >= 2)
      fmt::print("  dp{} gradient reduction: {} reduce-scatters per micro-batch on rank 0 (one per layer "
                 "group, after its backward){}\n",
                 s.cp > 1 ? " x cp" : "", trainer->grad_buckets(),
                 s.zero == 3 ? fmt::format("; parameters all-gathered per layer group, {}",
                                           cfg.zero_prefetch ? "the next one prefetched" : "not prefetched")
                             : std::string());
    else if (s.dp * s.cp > 1)
      fmt::print("  dp{} gradient reduction: {} {} of <= {} parameters on rank 0, {} the backward pass\n",
                 s.cp > 1 ? " x cp" : "", trainer->grad_buckets(), s.zero >= 1 ? "reduce-scatter buckets" : "all-reduce buckets",
                 cfg.grad_bucket_params > 0 ? cfg.grad_bucket_params : planner::default_grad_bucket_params(s.dp),
                 cfg.overlap_grad_reduce ? "started during" : "after");
    fmt::print("  data {}, seed {}, lr {}, steps {}, predicted step {}\n", data_name(cfg), cfg.seed,
               lr_text, cfg.steps,
               plan.prediction.iteration_s > 0 ? fmt::format("{:.3f} ms", plan.prediction.iteration_s * 1e3)
                                               : std::string("n/a (the plan has no prediction)"));
    if (!cfg.checkpoint_dir.empty())
      fmt::print("  checkpoints in {} (locked by this job), run {}{}\n", cfg.checkpoint_dir,
                 trainer->run_id(), cfg.resume ? " (resumed)" : "");
    std::fflush(stdout);
  }

  // Training: from here a failure may be on one rank only; it ends the whole job.
  try {
    bool first = true;
    while (trainer->step() < cfg.steps) {
      const std::int64_t next = trainer->step() + 1;
      if (o.die_at_step > 0 && next == o.die_at_step &&
          grid.world_rank() == std::min(o.die_rank, grid.world_size() - 1))
        std::raise(SIGKILL);
      if (o.throw_at_step > 0 && next == o.throw_at_step &&
          grid.world_rank() == std::min(o.die_rank, grid.world_size() - 1))
        input_error("debug: failure injected before step {} (--debug-throw-at-step)", next);
      const runtime::StepStats st = trainer->train_step();
      if (root) {
        if (st.step % o.log_every == 0 || st.step == cfg.steps) {
          fmt::print("step {:5d}/{} | loss {:.6f} | grad norm {:.4f} | {:8.2f} ms | {:9.0f} tok/s | "
                     "gemm {:3.0f}%{}\n",
                     st.step, cfg.steps, st.loss, st.grad_norm, st.step_s * 1e3, st.tokens_per_s,
                     st.step_s > 0 ? 100.0 * st.gemm_s / st.step_s : 0.0,
                     s.dp > 1 ? fmt::format(" | dp wait {:.2f} ms", st.dp_wait_s * 1e3) : "");
          std::fflush(stdout);
        }
        if (metrics.is_open()) {
          metrics << metrics_line(st, plan.prediction.iteration_s);
          metrics.flush();
          if (!metrics) input_error("--metrics {}: write failed", o.metrics);
        }
        if (first && !o.grad_norms.empty()) {
          nlohmann::ordered_json j;
          j["step"] = st.step;
          j["grad_norm"] = st.grad_norm;
          for (const auto& [name, norm] : trainer->param_grad_norms()) j["params"][name] = norm;
          write_file_atomic(o.grad_norms, j.dump(2) + "\n");
        }
      }
      first = false;
      const bool last = trainer->step() == cfg.steps;
      if (!cfg.checkpoint_dir.empty() &&
          ((cfg.checkpoint_every > 0 && trainer->step() % cfg.checkpoint_every == 0) || last)) {
        trainer->save_checkpoint();
        if (root) {
          fmt::print("checkpoint {}\n", runtime::checkpoint_step_dir(cfg.checkpoint_dir, trainer->step()));
          std::fflush(stdout);
        }
      }
    }
    if (root) {
      const runtime::RankMemory m = trainer->memory();
      fmt::print("memory per rank (rank 0, counted by the runtime): params {}, grads {}, optimizer {}, "
                 "peak gathered params {}, peak gathered grads {}, peak total {}\n",
                 byte_text(m.params_bytes), byte_text(m.grads_bytes), byte_text(m.optimizer_bytes),
                 byte_text(m.peak_gathered_params_bytes), byte_text(m.peak_gathered_grads_bytes),
                 byte_text(m.peak_total_bytes));
      std::fflush(stdout);
    }
  } catch (const runtime::TrainingDiverged&) {
    throw;  // the same on every rank: main.cpp prints it once (rank 0), exit 2
  } catch (const InputError& e) {
    abort_job(grid, "", e.what(), kExitInput);
  } catch (const DeviceError& e) {
    abort_job(grid, "device: ", e.what(), kExitInternal);
  } catch (const std::exception& e) {
    abort_job(grid, "internal: ", e.what(), kExitInternal);
  }
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
