#include "runtime/train_cuda.h"

#include <fmt/format.h>

#include "common/errors.h"

#if defined(STRATA_HAVE_CUDA) && STRATA_HAVE_CUDA
#include "kernels/cuda/cuda_device.h"
#include "kernels/gemm_dtype.h"
#include "models/model_stats.h"
#include "runtime/cuda/gpt_cuda.h"
#include "runtime/data_loader.h"
#endif

namespace strata::runtime {

#if defined(STRATA_HAVE_CUDA) && STRATA_HAVE_CUDA

namespace {

std::unique_ptr<DataLoader> make_data(const planner::Plan& plan, const TrainConfig& cfg) {
  const auto& m = plan.model;
  switch (cfg.data) {
    case DataKind::Synthetic:
      return std::make_unique<DataLoader>(DataLoader::synthetic(m.vocab, m.seq_len, cfg.seed));
    case DataKind::TokenFile:
      return std::make_unique<DataLoader>(
          DataLoader::token_file(cfg.data_path, m.vocab, m.seq_len, cfg.seed));
    case DataKind::TextFile:
      return std::make_unique<DataLoader>(
          DataLoader::text_file(cfg.data_path, m.vocab, m.seq_len, cfg.seed));
  }
  throw InternalError("unknown data kind");
}

}  // namespace

struct CudaTraining::Impl {
  planner::Plan plan;
  TrainConfig cfg;
  std::string gemm_dtype;
  std::unique_ptr<DataLoader> data;
  std::unique_ptr<GptCudaTrainer> trainer;
  kernels::CudaDeviceInfo device;
  double peak_flops = -1;   // dense FLOP/s of gemm_dtype on the plan's cluster's device
  double mfu = -1;
  std::vector<std::int32_t> tokens, targets;
};

CudaTraining::CudaTraining(const planner::Plan& plan, const TrainConfig& cfg,
                           const std::string& gemm_dtype)
    : impl_(std::make_unique<Impl>()) {
  const planner::Strategy& s = plan.strategy;
  if (s.dp * s.tp * s.pp * s.cp != 1)
    input_error("--backend cuda trains on one GPU: the plan has dp {} x tp {} x pp {} x cp {} (plan "
                "for one GPU, e.g. `strata plan --gpus 1`, or train this plan with --backend cpu)",
                s.dp, s.tp, s.pp, s.cp);
  if (!cfg.checkpoint_dir.empty() || cfg.resume)
    input_error("--backend cuda does not write or read checkpoints yet (drop --checkpoint-dir/--resume)");
  const kernels::GemmDType dtype = kernels::gemm_dtype_from_string(gemm_dtype);
  Impl& m = *impl_;
  m.plan = plan;
  m.cfg = cfg;
  m.gemm_dtype = gemm_dtype;
  m.data = make_data(plan, cfg);
  GptCudaConfig c;
  c.micro_batch = s.micro_batch;
  c.seed = cfg.seed;
  c.adamw = cfg.adamw;
  c.grad_clip = cfg.grad_clip;
  c.gemm_dtype = dtype;
  m.trainer = std::make_unique<GptCudaTrainer>(plan.model, c);  // InputError / DeviceError
  m.device = kernels::cuda_device_info(c.device);
}

CudaTraining::~CudaTraining() = default;

StepStats CudaTraining::train_step() {
  Impl& m = *impl_;
  const planner::Strategy& s = m.plan.strategy;
  const auto S = static_cast<std::size_t>(m.plan.model.seq_len);
  const std::int64_t step = m.trainer->step();
  const auto seqs = static_cast<std::size_t>(s.global_batch);
  m.tokens.resize(seqs * S);
  m.targets.resize(seqs * S);
  for (std::size_t i = 0; i < seqs; ++i)  // the CPU runtime's samples: step * global_batch + i
    m.data->sample(step * s.global_batch + static_cast<std::int64_t>(i), m.tokens.data() + i * S,
                   m.targets.data() + i * S);
  const double lr = m.cfg.lr_schedule.at(step + 1, m.cfg.adamw.lr);
  StepStats st;
  st.loss = m.trainer->train_step(m.tokens.data(), m.targets.data(),
                                  static_cast<int>(s.num_microbatches()), static_cast<float>(lr));
  const GptCudaStepTimes& t = m.trainer->last_times();
  st.step = m.trainer->step();
  st.grad_norm = m.trainer->last_grad_norm();
  st.lr = lr;
  st.step_s = t.step_s;
  st.tokens_per_s = t.step_s > 0 ? static_cast<double>(seqs * S) / t.step_s : 0;
  st.gemm_s = t.forward_backward_s;
  const double flops = models::model_flops_per_iteration(m.plan.model, s.global_batch);
  m.mfu = m.peak_flops > 0 && t.step_s > 0 ? flops / t.step_s / m.peak_flops : -1;
  return st;
}

std::int64_t CudaTraining::step() const { return impl_->trainer->step(); }

std::string CudaTraining::describe() const {
  const Impl& m = *impl_;
  return fmt::format("{} (cc {}.{}, {:.0f} GiB), gemm {}, {:.2f} GiB on the device", m.device.name,
                     m.device.cc_major, m.device.cc_minor, m.device.memory_gib, m.gemm_dtype,
                     static_cast<double>(m.trainer->device_bytes()) / (1u << 30));
}

void CudaTraining::set_peak_flops(double flops) { impl_->peak_flops = flops; }
double CudaTraining::last_mfu() const { return impl_->mfu; }
double CudaTraining::last_optimizer_s() const { return impl_->trainer->last_times().optimizer_s; }

#else  // no CUDA in this build

struct CudaTraining::Impl {};

CudaTraining::CudaTraining(const planner::Plan&, const TrainConfig&, const std::string&) {
  input_error("--backend cuda: this strata was built without CUDA (no toolkit found when it was "
              "configured); rebuild on a machine with /usr/local/cuda, or use --backend cpu");
}
CudaTraining::~CudaTraining() = default;
StepStats CudaTraining::train_step() { throw InternalError("no CUDA in this build"); }
std::int64_t CudaTraining::step() const { return 0; }
std::string CudaTraining::describe() const { return {}; }
void CudaTraining::set_peak_flops(double) {}
double CudaTraining::last_mfu() const { return -1; }
double CudaTraining::last_optimizer_s() const { return 0; }

#endif

}  // namespace strata::runtime
