// `strata train --backend cuda` (built only with CUDA) against `strata train` on one CPU
// rank: the same plan of model "tiny" (4 micro-batches per step), the same seed, data
// and learning-rate schedule; with fp32 GEMMs the per-step losses and gradient norms agree
// to 1e-4 relative over 6 steps and the metrics lines carry what the CPU run's do. With
// bf16 GEMMs the loss still falls. Skips when no GPU is visible.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cuda/cuda_device.h"
#include "tests/integration/runtime_mpi_util.h"

namespace strata::testing {
namespace {

constexpr int kSteps = 6;

TrainRun train_cuda(const Layout& l, const fs::path& dir, const std::vector<std::string>& extra) {
  const std::string plan = write_plan(l, dir);
  const std::string metrics = (dir / (l.name + "-cuda.jsonl")).string();
  std::vector<std::string> args = {"train", "--plan", plan, "--steps", std::to_string(kSteps), "--backend", "cuda",
                                   "--metrics", metrics, "--lr-schedule", "cosine", "--warmup-steps", "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  TrainRun r;
  r.result = run_strata(args, 120);
  if (r.result.exit_code == 0) r.steps = read_metrics(metrics);
  return r;
}

Layout tiny_one_rank() {
  Layout l;
  l.name = "tiny_cuda";
  l.micro_batch = 2;  // global batch 8: 4 micro-batches accumulated
  return l;
}

TEST(TrainCuda, Fp32GemmsFollowTheCpuRuntimesLossCurve) {
  if (kernels::cuda_device_count() == 0) GTEST_SKIP() << kernels::cuda_unavailable_reason();
  const TempDir dir("train_cuda_fp32");
  const Layout l = tiny_one_rank();
  const TrainRun gpu = train_cuda(l, dir, {"--gemm-dtype", "fp32"});
  ASSERT_EQ(gpu.result.exit_code, 0) << gpu.result.err << gpu.result.out;
  EXPECT_NE(gpu.result.out.find("MFU"), std::string::npos) << gpu.result.out;
  const TrainRun cpu = train(l, dir, kSteps, {"--lr-schedule", "cosine", "--warmup-steps", "2"});
  ASSERT_EQ(cpu.result.exit_code, 0) << cpu.result.err;
  ASSERT_EQ(gpu.steps.size(), static_cast<std::size_t>(kSteps));
  ASSERT_EQ(cpu.steps.size(), static_cast<std::size_t>(kSteps));
  for (std::size_t i = 0; i < gpu.steps.size(); ++i) {
    const auto &g = gpu.steps[i], &c = cpu.steps[i];
    EXPECT_EQ(g.step, c.step);
    EXPECT_DOUBLE_EQ(g.lr, c.lr) << "step " << g.step;
    EXPECT_LE(std::abs(g.loss - c.loss), 1e-4 * c.loss) << "step " << g.step << ": " << g.loss << " vs " << c.loss;
    EXPECT_LE(std::abs(g.grad_norm - c.grad_norm), 1e-3 * c.grad_norm) << "step " << g.step;
  }
}

TEST(TrainCuda, Bf16GemmsLearn) {
  if (kernels::cuda_device_count() == 0) GTEST_SKIP() << kernels::cuda_unavailable_reason();
  const TempDir dir("train_cuda_bf16");
  const TrainRun gpu = train_cuda(tiny_one_rank(), dir, {});
  ASSERT_EQ(gpu.result.exit_code, 0) << gpu.result.err << gpu.result.out;
  ASSERT_EQ(gpu.steps.size(), static_cast<std::size_t>(kSteps));
  EXPECT_LT(gpu.steps.back().loss, gpu.steps.front().loss);
}

}  // namespace
}  // namespace strata::testing
