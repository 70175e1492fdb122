// GptCudaTrainer: a whole GPT training step resident on one CUDA GPU: the CPU runtime's
// GPT (LayerNorm, GELU tanh, learned positions, biases, tied or untied embeddings, causal
// attention) with the same parameter names, shapes and initial values (runtime::ParamSpec
// + init_param on the host, copied to the device), forward + backward over the
// micro-batches of a step (gradient accumulation), the mean token cross-entropy,
// global-norm gradient clipping as runtime/trainer.cpp does, and AdamW as
// runtime/adamw.cpp (decoupled decay on the parameters whose spec says weight_decay).
// One stream; kernels in gpt_kernels.cu, GEMMs on cuBLASLt.
//
// Precision (gemm_dtype = bf16, the default):
//   - master weights, gradients and both AdamW moments: fp32;
//   - activations kept for the backward and every elementwise / norm / softmax / loss
//     kernel: fp32, with fp32 reductions (loss sum and gradient norm in double);
//   - GEMMs: bf16 operands, fp32 accumulate (cuBLASLt CUBLAS_COMPUTE_32F). The weights'
//     bf16 copy is refreshed by the AdamW kernel; activation operands are rounded to bf16
//     into a scratch buffer just before each GEMM. kernels::CublasLtGemm writes its output
//     in the operand type, so every GEMM result is rounded to bf16 once and then widened
//     into its fp32 destination (added to it for the weight-gradient accumulation and the
//     residual adds). That single rounding of each product is the main difference from
//     the CPU runtime (relative ~4e-3 per element).
// gemm_dtype = fp32 runs every GEMM in fp32 (no conversions): the same math as the CPU
// runtime up to summation order, for checking the kernels; tf32 likewise with TF32 tensor
// cores. fp16 is refused: it would need loss scaling.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/gemm_dtype.h"
#include "models/model_spec.h"
#include "runtime/adamw.h"

namespace strata::runtime {

struct GptCudaConfig {
  std::int64_t micro_batch = 1;   // sequences per micro-batch
  std::uint64_t seed = 1234;      // initial weights: the CPU runtime's for the same seed
  AdamWConfig adamw;              // adamw.lr is not used: train_step takes the rate
  double grad_clip = 1.0;         // global L2 norm; 0 = off
  kernels::GemmDType gemm_dtype = kernels::GemmDType::Bf16;  // bf16, tf32 or fp32
  // true: attention's per-(sequence, head) products as strided-batched cuBLASLt calls;
  // false: one kernels::CublasLtGemm call per (sequence, head) (slow; a cross-check).
  bool batched_attention = true;
  int device = 0;
};

struct GptCudaStepTimes {
  double step_s = 0;               // host wall time of train_step
  double forward_backward_s = 0;   // device time of the micro-batches (CUDA events)
  double optimizer_s = 0;          // device time of gradient norm + clipping + AdamW
};

class GptCudaTrainer {
 public:
  // InputError (before touching the device) for a model that is not a GPT (RMSNorm,
  // SwiGLU, RoPE, grouped-query attention), micro_batch < 1 or gemm_dtype fp16;
  // DeviceError when there is no usable device.
  GptCudaTrainer(const models::ModelSpec& spec, const GptCudaConfig& cfg);
  ~GptCudaTrainer();
  GptCudaTrainer(const GptCudaTrainer&) = delete;
  GptCudaTrainer& operator=(const GptCudaTrainer&) = delete;

  // One optimizer step over `micro_batches` micro-batches. tokens and targets hold
  // micro_batches * micro_batch * seq_len ids in [0, vocab) (InputError otherwise),
  // micro-batch m at offset m * micro_batch * seq_len, sequences one after another.
  // Returns the mean token loss of the step (computed before the update). Synchronizes.
  double train_step(const std::int32_t* tokens, const std::int32_t* targets, int micro_batches,
                    float lr);

  std::int64_t step() const;               // steps completed
  double last_grad_norm() const;           // global L2 norm of the last step, before clipping
  const GptCudaStepTimes& last_times() const;
  std::int64_t num_params() const;         // model parameters (the tied table once)
  std::size_t device_bytes() const;        // device memory this trainer allocated
  const models::ModelSpec& spec() const;

  // Parameter names in the CPU runtime's order ("embedding.wte", "blocks.0.norm1.weight", ...).
  std::vector<std::string> param_names() const;
  // Copies of one parameter's current values and of its gradient from the last step
  // (summed over the micro-batches, before clipping), in the CPU runtime's layout.
  // InternalError for an unknown name.
  std::vector<float> param(const std::string& name) const;
  std::vector<float> grad(const std::string& name) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::runtime
