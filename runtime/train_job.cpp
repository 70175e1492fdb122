#include "runtime/train_job.h"

#include <mpi.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "costmodel/rank_grid.h"
#include "kernels/cpu/mpi_communicator.h"
#include "runtime/checkpoint.h"
#include "runtime/collective_error.h"
#include "runtime/preflight.h"
#include "runtime/process_grid.h"
#include "runtime/train_output.h"
#include "runtime/trainer.h"

namespace strata::runtime {

namespace {

[[noreturn]] void abort_job(ProcessGrid& grid, const char* kind, const std::string& what, int code) {
  std::fflush(stdout);
  if (grid.world_size() > 1) fmt::print(stderr, "error: {}rank {}: {}\n", kind, grid.world_rank(), what);
  else fmt::print(stderr, "error: {}{}\n", kind, what);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return
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

// "0.001", or with a schedule "0.001 (warm-up 10 steps, cosine to 0.0001 at step 100)".
std::string lr_text(const TrainConfig& cfg) {
  const auto& ls = cfg.lr_schedule;
  if (ls.decay == LrDecay::Constant && ls.warmup == 0) return fmt::format("{}", cfg.adamw.lr);
  return fmt::format("{} ({}{}{})", cfg.adamw.lr, ls.warmup > 0 ? fmt::format("warm-up {} steps", ls.warmup) : "",
                     ls.warmup > 0 && ls.decay != LrDecay::Constant ? ", " : "",
                     ls.decay == LrDecay::Constant
                         ? std::string()
                         : fmt::format("{} to {} at step {}", to_string(ls.decay), ls.min, ls.decay_steps));
}

// Rank 0's lines before the first step: the model, the layout, the gradient reduction, the
// data and schedule, the checkpoints.
void print_job_header(const TrainJob& job, const Trainer& trainer, const ProcessGrid& grid) {
  const planner::Plan& plan = job.plan;
  const planner::Strategy& s = plan.strategy;
  const TrainConfig& cfg = job.cfg;
  fmt::print("strata train: model {} (layers {}, hidden {}, heads {}, vocab {}, seq {}), {} rank{}\n",
             plan.model.name, plan.model.layers, plan.model.hidden, plan.model.heads,
             plan.model.vocab, plan.model.seq_len, grid.world_size(), grid.world_size() == 1 ? "" : "s");
  fmt::print("  layout dp {} x tp {} x pp {} x cp {}{} (vpp {}, {}), micro-batch {} x {} per rank, global "
             "batch {} ({} tokens), zero {}, recompute {}, sequence parallel {}\n",
             s.dp, s.tp, s.pp,
             s.cp > 1 ? fmt::format("{} ({} K/V)", s.cp, to_string(cfg.cp_kv_exchange)) : "1",
             plan.model.moe ? fmt::format(", experts over ep {} x edp {} (etp {})", s.ep, s.edp(), s.etp) : "",
             s.vpp, planner::to_string(s.schedule), s.micro_batch,
             s.num_microbatches(), s.global_batch, trainer.tokens_per_step(), s.zero,
             planner::to_string(s.recompute), s.sequence_parallel ? "on" : "off");
  if (s.dp * s.cp > 1 && s.zero >= 2)
    fmt::print("  dp{} gradient reduction: {} reduce-scatters per micro-batch on rank 0 (one per layer "
               "group, after its backward){}\n",
               s.cp > 1 ? " x cp" : "", trainer.grad_buckets(),
               s.zero == 3 ? fmt::format("; parameters all-gathered per layer group, {}",
                                         cfg.zero_prefetch ? "the next one prefetched" : "not prefetched")
                           : std::string());
  else if (s.dp * s.cp > 1)
    fmt::print("  dp{} gradient reduction: {} {} of <= {} parameters on rank 0, {} the backward pass\n",
               s.cp > 1 ? " x cp" : "", trainer.grad_buckets(), s.zero >= 1 ? "reduce-scatter buckets" : "all-reduce buckets",
               cfg.grad_bucket_params > 0 ? cfg.grad_bucket_params : planner::default_grad_bucket_params(s.dp),
               cfg.overlap_grad_reduce ? "started during" : "after");
  fmt::print("  data {}, seed {}, lr {}, steps {}, predicted step {}\n", data_description(cfg), cfg.seed,
             lr_text(cfg), cfg.steps,
             plan.prediction.iteration_s > 0 ? fmt::format("{:.3f} ms", plan.prediction.iteration_s * 1e3)
                                             : std::string("n/a (the plan has no prediction)"));
  if (!cfg.checkpoint_dir.empty())
    fmt::print("  checkpoints in {} (locked by this job), run {}{}\n", cfg.checkpoint_dir,
               trainer.run_id(), cfg.resume ? " (resumed)" : "");
  std::fflush(stdout);
}

void print_memory(const Trainer& trainer) {
  const RankMemory m = trainer.memory();
  fmt::print("memory per rank (rank 0, counted by the runtime): params {}, grads {}, optimizer {}, "
             "peak gathered params {}, peak gathered grads {}, peak total {}\n",
             byte_text(m.params_bytes), byte_text(m.grads_bytes), byte_text(m.optimizer_bytes),
             byte_text(m.peak_gathered_params_bytes), byte_text(m.peak_gathered_grads_bytes),
             byte_text(m.peak_total_bytes));
  std::fflush(stdout);
}

// The steps, with rank 0's step lines, metrics and (test hook) gradient norms, and the
// checkpoints. A failure here may be one rank's own: the caller ends the whole job.
void train_steps(const TrainJob& job, Trainer& trainer, const ProcessGrid& grid,
                 std::optional<MetricsFile>& metrics) {
  const TrainConfig& cfg = job.cfg;
  const planner::Strategy& s = job.plan.strategy;
  const bool root = grid.world_rank() == 0;
  const bool hooked_rank = grid.world_rank() == std::min(job.die_rank, grid.world_size() - 1);
  bool first = true;
  while (trainer.step() < cfg.steps) {
    const std::int64_t next = trainer.step() + 1;
    if (job.die_at_step > 0 && next == job.die_at_step && hooked_rank) std::raise(SIGKILL);
    if (job.throw_at_step > 0 && next == job.throw_at_step && hooked_rank)
      input_error("debug: failure injected before step {} (--debug-throw-at-step)", next);
    const StepStats st = trainer.train_step();
    if (root) {
      if (st.step % job.log_every == 0 || st.step == cfg.steps) {
        fmt::print("step {:5d}/{} | loss {:.6f} | grad norm {:.4f} | {:8.2f} ms | {:9.0f} tok/s | "
                   "gemm {:3.0f}%{}\n",
                   st.step, cfg.steps, st.loss, st.grad_norm, st.step_s * 1e3, st.tokens_per_s,
                   st.step_s > 0 ? 100.0 * st.gemm_s / st.step_s : 0.0,
                   s.dp > 1 ? fmt::format(" | dp wait {:.2f} ms", st.dp_wait_s * 1e3) : "");
        std::fflush(stdout);
      }
      if (metrics) metrics->write(st, job.plan.prediction.iteration_s);
      if (first && !job.grad_norms_path.empty()) {
        nlohmann::ordered_json j;
        j["step"] = st.step;
        j["grad_norm"] = st.grad_norm;
        for (const auto& [name, norm] : trainer.param_grad_norms()) j["params"][name] = norm;
        write_file_atomic(job.grad_norms_path, j.dump(2) + "\n");
      }
    }
    first = false;
    const bool last = trainer.step() == cfg.steps;
    if (!cfg.checkpoint_dir.empty() &&
        ((cfg.checkpoint_every > 0 && trainer.step() % cfg.checkpoint_every == 0) || last)) {
      trainer.save_checkpoint();
      if (root) {
        fmt::print("checkpoint {}\n", checkpoint_step_dir(cfg.checkpoint_dir, trainer.step()));
        std::fflush(stdout);
      }
    }
  }
  if (root) print_memory(trainer);
}

}  // namespace

void run_training_job(const TrainJob& job) {
  const planner::Plan& plan = job.plan;
  const planner::Strategy& s = plan.strategy;
  const TrainConfig& cfg = job.cfg;
  const costmodel::RankGrid rank_grid(s.dp, s.tp, s.pp, s.rank_order, s.cp);

  kernels::mpi_init_once(nullptr, nullptr);
  ProcessGrid grid(rank_grid, s.ep, s.etp);  // InputError on every rank if the world size differs
  const bool root = grid.world_rank() == 0;
  if (root && !job.plan_note.empty()) {
    fmt::print("note: --plan {}: {}\n", job.plan_path, job.plan_note);
    std::fflush(stdout);
  }
  // Memory pre-flight: every rank checks its own host (ranks sharing it counted once).
  throw_if_any_rank_failed(grid.world(), capture_error([&] {
    check_plan_memory(plan, job.plan_path, ranks_on_this_host(), host_memory_gib(), job.device_reserve_gib);
  }));

  // Set-up that may fail on some ranks only: agree before anyone continues.
  std::unique_ptr<Trainer> trainer;
  std::unique_ptr<CheckpointDirLock> folder_lock;  // held until the job ends
  std::optional<MetricsFile> metrics;
  throw_if_any_rank_failed(grid.world(), capture_error([&] {
    // Fail now, not after the first K steps: rank 0 creates and locks the folder, and a
    // fresh run refuses another run's checkpoints.
    if (root && !cfg.checkpoint_dir.empty()) folder_lock = claim_checkpoint_dir(cfg.checkpoint_dir, cfg.resume);
    trainer = std::make_unique<Trainer>(plan, cfg, grid);
  }));
  std::int64_t resumed_at = 0;
  if (cfg.resume) {
    const std::int64_t at = resumed_at = trainer->resume();
    if (root) fmt::print("resumed from {} at step {}{}\n", checkpoint_step_dir(cfg.checkpoint_dir, at),
                         at, at >= cfg.steps ? fmt::format(" (>= --steps {}: nothing to train)", cfg.steps) : "");
  }
  throw_if_any_rank_failed(grid.world(), capture_error([&] {
    if (!root || job.metrics_path.empty()) return;
    // After --resume the metrics continue from the checkpoint's step: lines of steps the
    // previous job ran past its last checkpoint are dropped, so no step appears twice.
    metrics.emplace(job.metrics_path, trainer->run_id(),
                    cfg.resume ? std::optional<std::int64_t>(resumed_at) : std::nullopt);
  }));
  if (root) print_job_header(job, *trainer, grid);

  // Training: from here a failure may be on one rank only; it ends the whole job.
  try {
    train_steps(job, *trainer, grid, metrics);
  } catch (const TrainingDiverged&) {
    throw;  // the same on every rank: the caller prints it once (rank 0), exit 2
  } catch (const InputError& e) {
    abort_job(grid, "", e.what(), kExitInput);
  } catch (const DeviceError& e) {
    abort_job(grid, "device: ", e.what(), kExitInternal);
  } catch (const std::exception& e) {
    abort_job(grid, "internal: ", e.what(), kExitInternal);
  }
}

}  // namespace strata::runtime
