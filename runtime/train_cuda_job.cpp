#include "runtime/train_cuda_job.h"

#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <optional>

#include <fmt/format.h>

#include "common/errors.h"
#include "kernels/cpu/mpi_communicator.h"
#include "runtime/train_cuda.h"
#include "runtime/train_output.h"

namespace strata::runtime {

void run_cuda_training_job(const TrainJob& job, const std::string& gemm_dtype, double peak_flops) {
  kernels::mpi_init_once(nullptr, nullptr);
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world != 1)
    input_error("--backend cuda trains on one GPU in one process; launched with {} ranks (run it "
                "without mpirun)", world);
  if (!job.grad_norms_path.empty()) input_error("--debug-grad-norms is for --backend cpu");
  const planner::Plan& plan = job.plan;
  const TrainConfig& cfg = job.cfg;
  if (!job.plan_note.empty()) fmt::print("note: --plan {}: {}\n", job.plan_path, job.plan_note);
  CudaTraining run(plan, cfg, gemm_dtype);
  run.set_peak_flops(peak_flops);
  std::optional<MetricsFile> metrics;
  if (!job.metrics_path.empty()) metrics.emplace(job.metrics_path, job.cfg.run_id, std::nullopt);
  const planner::Strategy& s = plan.strategy;
  fmt::print("strata train --backend cuda: model {} (layers {}, hidden {}, heads {}, vocab {}, seq {})\n",
             plan.model.name, plan.model.layers, plan.model.hidden, plan.model.heads, plan.model.vocab,
             plan.model.seq_len);
  fmt::print("  device {}\n  micro-batch {} x {}, global batch {} ({} tokens), data {}, seed {}, lr {}, steps {}\n",
             run.describe(), s.micro_batch, s.num_microbatches(), s.global_batch,
             s.global_batch * plan.model.seq_len, data_description(cfg), cfg.seed, cfg.adamw.lr, cfg.steps);
  std::fflush(stdout);
  while (run.step() < cfg.steps) {
    const StepStats st = run.train_step();
    if (!std::isfinite(st.loss) || !std::isfinite(st.grad_norm))
      throw TrainingDiverged(fmt::format(
          "step {}: the {} is not finite: training diverged (lower --lr, check --data)", st.step,
          std::isfinite(st.loss) ? "gradient norm" : "loss"));
    if (st.step % job.log_every == 0 || st.step == cfg.steps) {
      const double mfu = run.last_mfu();
      fmt::print("step {:5d}/{} | loss {:.6f} | grad norm {:.4f} | {:8.2f} ms | {:9.0f} tok/s | "
                 "fwd+bwd {:.2f} ms | optimizer {:.2f} ms{}\n",
                 st.step, cfg.steps, st.loss, st.grad_norm, st.step_s * 1e3, st.tokens_per_s,
                 st.gemm_s * 1e3, run.last_optimizer_s() * 1e3,
                 mfu >= 0 ? fmt::format(" | MFU {:.1f}%", 100 * mfu) : "");
      std::fflush(stdout);
    }
    if (metrics) metrics->write(st, plan.prediction.iteration_s);
  }
}

}  // namespace strata::runtime
