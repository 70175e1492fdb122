// `strata train --backend cuda`: the plan's model trained on one GPU by runtime/cuda's
// GptCudaTrainer (bf16 GEMMs with fp32 accumulate, fp32 master weights, activations and
// AdamW), with the same data samples, learning-rate schedule, clipping and initial
// weights as the CPU runtime, so the two loss curves are comparable.
//
// One GPU only: a plan with dp x tp x pp > 1 is an InputError (the multi-GPU CUDA
// runtime is not built), and so are a model that is not a GPT and checkpoint flags (the
// CUDA path does not write checkpoints yet). In a build without CUDA every use is an
// InputError saying so: the class is always built (target strata_train_cuda), the device
// code only with CUDA (runtime/cuda/, strata_runtime_cuda).
#pragma once
#include <memory>
#include <string>

#include "planner/plan.h"
#include "runtime/train_config.h"
#include "runtime/trainer.h"

namespace strata::runtime {

class CudaTraining {
 public:
  // gemm_dtype: bf16 (default), tf32 or fp32.
  CudaTraining(const planner::Plan& plan, const TrainConfig& cfg, const std::string& gemm_dtype);
  ~CudaTraining();
  CudaTraining(const CudaTraining&) = delete;
  CudaTraining& operator=(const CudaTraining&) = delete;

  // One global batch (the plan's micro-batches accumulated). gemm_s holds the device time
  // of forward + backward; dp_wait_s is 0.
  StepStats train_step();
  std::int64_t step() const;
  // "NVIDIA H200 (cc 9.0, 141 GiB), gemm bf16, 1.23 GiB on the device".
  std::string describe() const;
  // The dense FLOP/s of the GEMM dtype on the plan's device, for last_mfu (the caller reads
  // it from the plan's cluster; the runtime does not load clusters). Not set, or <= 0: none.
  void set_peak_flops(double flops);
  // Model FLOPs utilisation of the last step against that peak, or a negative value when
  // there is none.
  double last_mfu() const;
  double last_optimizer_s() const;  // device time of clipping + AdamW in the last step

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::runtime
