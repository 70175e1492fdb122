// GptCudaTrainer (built only with CUDA) against the CPU runtime on one rank: the same
// initial weights, per-step losses over 5 steps of model "tiny" (tight with fp32 GEMMs,
// bf16-sized tolerance with bf16 GEMMs), first-step gradients tensor by tensor, a loss
// that falls every step, the looped and the batched attention GEMMs, and the inputs it
// refuses. Tests that need a GPU skip when none is visible; the refusals run everywhere.
#include "runtime/cuda/gpt_cuda.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/errors.h"
#include "kernels/cuda/cuda_device.h"
#include "models/model_spec.h"
#include "runtime/adamw.h"
#include "runtime/data_loader.h"
#include "runtime/model_chunk.h"
#include "runtime/model_dims.h"
#include "runtime/parameter_store.h"

namespace strata::runtime {
namespace {

#define SKIP_WITHOUT_DEVICE() \
  if (kernels::cuda_device_count() == 0) GTEST_SKIP() << kernels::cuda_unavailable_reason()

constexpr std::int64_t kMicroBatch = 2;
constexpr int kMicroBatches = 2;  // gradient accumulation
constexpr int kSteps = 5;
constexpr float kLr = 3e-3f;
constexpr std::uint64_t kSeed = 1234;

struct Batch {
  std::vector<std::int32_t> tokens, targets;
};

// The sequences of step `step` from the synthetic loader (a learnable pattern, so the
// loss must fall), micro-batch after micro-batch.
Batch batch_of(const models::ModelSpec& spec, std::int64_t step) {
  const DataLoader data = DataLoader::synthetic(spec.vocab, spec.seq_len, kSeed);
  const std::int64_t per_step = kMicroBatch * kMicroBatches;
  const auto S = static_cast<std::size_t>(spec.seq_len);
  Batch b;
  b.tokens.resize(static_cast<std::size_t>(per_step) * S);
  b.targets.resize(b.tokens.size());
  for (std::int64_t i = 0; i < per_step; ++i)
    data.sample(step * per_step + i, b.tokens.data() + static_cast<std::size_t>(i) * S,
                b.targets.data() + static_cast<std::size_t>(i) * S);
  return b;
}

GptCudaConfig config(kernels::GemmDType dtype) {
  GptCudaConfig c;
  c.micro_batch = kMicroBatch;
  c.seed = kSeed;
  c.gemm_dtype = dtype;
  return c;
}

// The CPU runtime's whole model on one rank, stepped as runtime/trainer.cpp steps it:
// zeroed gradients, micro-batches with token weight 1 / tokens of the step, global L2
// norm, clipping, AdamW per tensor with its weight-decay flag.
class CpuReference {
 public:
  CpuReference(const models::ModelSpec& spec, const GptCudaConfig& cfg)
      : cfg_(cfg), dims_(make_model_dims(spec, cfg.micro_batch, 1, 0, false, planner::Recompute::None)) {
    ChunkLayout layout;
    layout.embedding = true;
    for (int b = 0; b < static_cast<int>(spec.layers); ++b) layout.blocks.push_back(b);
    layout.head = true;
    for (const auto& s : ModelChunk<float>::param_specs(dims_, layout)) store_.add(s);
    store_.finalize();
    store_.init(cfg.seed);
    chunk_ = std::make_unique<ModelChunk<float>>(dims_, layout, store_, TpGroup{});
    m_.assign(store_.padded_size(), 0.0f);
    v_.assign(store_.padded_size(), 0.0f);
  }

  double step(const Batch& b, float lr) {
    store_.zero_grads();
    const std::size_t n = dims_.rows();
    const float w = 1.0f / static_cast<float>(n * kMicroBatches);
    double loss = 0;
    for (int mb = 0; mb < kMicroBatches; ++mb) {
      ChunkActivations<float> acts;
      loss += chunk_->forward(acts, b.tokens.data() + mb * n, b.targets.data() + mb * n, nullptr, nullptr, w);
      chunk_->backward(acts, nullptr, nullptr);
    }
    double sq = 0;
    for (float g : store_.grads()) sq += static_cast<double>(g) * g;
    const double norm = std::sqrt(sq);
    float scale = 1.0f;
    if (cfg_.grad_clip > 0 && norm > cfg_.grad_clip) scale = static_cast<float>(cfg_.grad_clip / (norm + 1e-6));
    ++step_;
    AdamWConfig a = cfg_.adamw;
    a.lr = lr;
    for (const auto& e : store_.entries())
      adamw_update(store_.params().data() + e.offset, store_.grads().data() + e.offset, m_.data() + e.offset,
                   v_.data() + e.offset, e.numel, a, step_, e.spec.weight_decay, scale);
    return loss;
  }

  ParameterStore<float>& store() { return store_; }

 private:
  GptCudaConfig cfg_;
  ModelDims dims_;
  ParameterStore<float> store_;
  std::unique_ptr<ModelChunk<float>> chunk_;
  std::vector<float> m_, v_;
  std::int64_t step_ = 0;
};

double l2(const std::vector<float>& a) {
  double s = 0;
  for (float x : a) s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

// Each tensor's gradient on the device against the CPU's: ||g_gpu - g_cpu|| relative to
// ||g_cpu||, floored at 1e-3 of the whole gradient's norm (a tensor whose true gradient is
// zero, like the key bias under softmax, holds rounding noise only).
void expect_gradients_close(GptCudaTrainer& gpu, ParameterStore<float>& cpu, double tolerance) {
  const double total = l2(cpu.grads());
  ASSERT_GT(total, 0.0);
  double worst = 0;
  std::string worst_name;
  for (const auto& name : gpu.param_names()) {
    const auto& e = cpu.entry(name);
    const std::vector<float> g = gpu.grad(name);
    ASSERT_EQ(g.size(), e.numel) << name;
    double diff = 0, ref = 0;
    for (std::size_t i = 0; i < e.numel; ++i) {
      const double c = cpu.grads()[e.offset + i];
      diff += (g[i] - c) * (g[i] - c);
      ref += c * c;
    }
    const double rel = std::sqrt(diff) / std::max(std::sqrt(ref), 1e-3 * total);
    EXPECT_LT(rel, tolerance) << name << ": relative gradient difference " << rel;
    if (rel >= worst) {
      worst = rel;
      worst_name = name;
    }
  }
  std::printf("  step 1 gradients: largest relative difference %.2e (%s)\n", worst, worst_name.c_str());
}

// Trains `kSteps` steps on both sides, every step on the same synthetic batch (the model
// memorizes it, so the loss falls every step: on the CPU 5.54, 5.18, 5.01, 4.78, 4.60;
// fresh batches at this rate stay near 5.55 for 5 steps); checks the losses step by step
// within `loss_rtol` and the first step's gradients within `grad_rtol`. Returns the
// device losses.
std::vector<double> train_against_cpu(kernels::GemmDType dtype, double loss_rtol, double grad_rtol) {
  const models::ModelSpec spec = models::load_model("tiny");
  const GptCudaConfig cfg = config(dtype);
  GptCudaTrainer gpu(spec, cfg);
  CpuReference cpu(spec, cfg);
  EXPECT_EQ(gpu.num_params(), static_cast<std::int64_t>(cpu.store().size()));
  for (const auto& name : gpu.param_names()) {  // the same initial weights, bit for bit
    const auto& e = cpu.store().entry(name);
    const std::vector<float> p = gpu.param(name);
    EXPECT_TRUE(std::equal(p.begin(), p.end(), cpu.store().params().begin() + static_cast<std::ptrdiff_t>(e.offset)))
        << name;
  }
  std::vector<double> losses;
  const Batch b = batch_of(spec, 0);
  for (int s = 0; s < kSteps; ++s) {
    const double lg = gpu.train_step(b.tokens.data(), b.targets.data(), kMicroBatches, kLr);
    const double lc = cpu.step(b, kLr);
    std::printf("[ %s ] step %d  loss gpu %.7f  cpu %.7f  rel %.2e  grad_norm %.5f\n", kernels::to_string(dtype),
                s + 1, lg, lc, std::abs(lg - lc) / lc, gpu.last_grad_norm());
    EXPECT_TRUE(std::isfinite(lg)) << "step " << s + 1;
    EXPECT_NEAR(lg, lc, loss_rtol * lc) << "step " << s + 1;
    if (s == 0) expect_gradients_close(gpu, cpu.store(), grad_rtol);
    if (s > 0) {
      EXPECT_LT(lg, losses.back()) << "step " << s + 1 << ": the loss did not fall";
    }
    losses.push_back(lg);
  }
  return losses;
}

TEST(GptCudaTrainer, RefusesModelsAndSettingsItDoesNotImplement) {
  // Checked before the device is touched: these run without a GPU too.
  EXPECT_THROW(GptCudaTrainer(models::load_model("tiny-llama"), config(kernels::GemmDType::Bf16)), InputError);
  EXPECT_THROW(GptCudaTrainer(models::load_model("tiny"), config(kernels::GemmDType::Fp16)), InputError);
  GptCudaConfig zero = config(kernels::GemmDType::Bf16);
  zero.micro_batch = 0;
  EXPECT_THROW(GptCudaTrainer(models::load_model("tiny"), zero), InputError);
}

TEST(GptCudaTrainer, Fp32GemmsMatchTheCpuRuntimeStepByStep) {
  SKIP_WITHOUT_DEVICE();
  train_against_cpu(kernels::GemmDType::Fp32, 1e-4, 1e-3);
}

TEST(GptCudaTrainer, Bf16GemmsTrackTheCpuRuntimeAndTheLossFalls) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<double> losses = train_against_cpu(kernels::GemmDType::Bf16, 2e-2, 0.1);
  ASSERT_EQ(losses.size(), static_cast<std::size_t>(kSteps));
  EXPECT_LT(losses.back(), losses.front() - 0.5);
}

TEST(GptCudaTrainer, LoopedAttentionGemmsEqualBatchedOnes) {
  SKIP_WITHOUT_DEVICE();
  const models::ModelSpec spec = models::load_model("tiny");
  GptCudaConfig batched = config(kernels::GemmDType::Fp32), looped = batched;
  looped.batched_attention = false;
  GptCudaTrainer a(spec, batched), b(spec, looped);
  for (int s = 0; s < 2; ++s) {
    const Batch in = batch_of(spec, s);
    const double la = a.train_step(in.tokens.data(), in.targets.data(), kMicroBatches, kLr);
    const double lb = b.train_step(in.tokens.data(), in.targets.data(), kMicroBatches, kLr);
    EXPECT_NEAR(la, lb, 1e-5 * la) << "step " << s + 1;
  }
}

TEST(GptCudaTrainer, RejectsTokensOutsideTheVocabulary) {
  SKIP_WITHOUT_DEVICE();
  const models::ModelSpec spec = models::load_model("tiny");
  GptCudaTrainer gpu(spec, config(kernels::GemmDType::Bf16));
  Batch b = batch_of(spec, 0);
  b.tokens[3] = static_cast<std::int32_t>(spec.vocab);
  EXPECT_THROW(gpu.train_step(b.tokens.data(), b.targets.data(), kMicroBatches, kLr), InputError);
  b = batch_of(spec, 0);
  b.targets[5] = -1;
  EXPECT_THROW(gpu.train_step(b.tokens.data(), b.targets.data(), kMicroBatches, kLr), InputError);
  EXPECT_THROW(gpu.train_step(b.tokens.data(), b.targets.data(), 0, kLr), InputError);
  EXPECT_EQ(gpu.step(), 0);
}

}  // namespace
}  // namespace strata::runtime
