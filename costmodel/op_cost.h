// OpCost: forward and backward time of one models::Op on one rank, given the
// tensor-parallel degree, sequence parallelism and the compute dtype.
//
// GEMM ops (models::is_gemm) are sharded per Op::sharding (Megatron):
//   ColumnParallel, VocabParallel, HeadParallel: n / tp;  RowParallel: k / tp;
//   Replicated: full shape, m / tp with sequence parallelism.
//   (divisions round up). forward = GEMM(m, n, k); backward = dgrad GEMM(m, k, n)
//   + wgrad GEMM(k, n, m), each timed by GemmCost (measured table or roofline).
//   dtype Fp8 (the linear layers of an FP8 recipe, costmodel/fp8_linear.h): the three
//   GEMMs at the fp8 rate plus the casts to FP8 as memory passes (fp8_activation_casts
//   bytes / achieved bandwidth + one kernel overhead each way).
// AttentionCore, by the stack's attention kernel (OpCostOptions):
// flash2 / flash1 / cudnn: the model FLOPs of the op (QK^T and AV: 4*b*s^2*h
//   forward, unsharded) are halved for the causal mask, divided by tp (heads/tp
//   per rank), and run at peak(dtype) * attention_efficiency (cudnn and flash1: the
//   profile's attention_cudnn / attention_flash1 where it has one). Backward charges
//   2.5x the forward FLOPs (flash backward recomputes QK^T: 5 matmuls vs 2;
//   Dao 2023, FlashAttention-2 sec. 4), at the same efficiency.
// unfused (Megatron's CoreAttention before FlashAttention): per rank b*heads/tp
//   strided-batched GEMMs over the full s x s scores (no causal saving): forward QK^T
//   (s, s, d) and PV (s, d, s); backward dP = dO V^T (s, s, d) and dV, dQ, dK (s, d, s),
//   each timed by GemmCost::batched; plus memory passes over the scores (2-byte
//   elements): softmax forward read + write (4 B per score; 3 separate scale / mask /
//   softmax kernels when not fused: 12 B), backward read y, dy + write dx (6 B); dropout
//   (p > 0) forward read + write + 1-byte mask (5 B), backward the same (5 B); and the
//   context's [b, np, s, d] -> [s, b, h] copy (read + write b*s*h/tp) each way.
// Eager (unfused) elementwise parts, by the stack (costmodel/eager_elementwise.h): an
//   RMSNorm composed of fp32 tensor ops (fusions.layernorm false on an RMSNorm model), RoPE
//   as a complex multiply (fusions.rope false), and the attention module's K/V repeat and
//   output copies (attention.layout_copies) charged on the attention core.
// Loss (Op::logits > 0): the stack's cross-entropy passes over the V/tp logits of each
//   token (costmodel/cross_entropy_cost.h: unfused Megatron 38 B per bf16 logit forward,
//   14 B backward), as a memory-bound op.
// Every op also pays OpCostOptions::kernel_overhead_s per non-GEMM kernel it launches
//   (kernel_count()): with bytes / bandwidth this makes an alpha-beta model, so small
//   elementwise kernels reach a lower fraction of the bandwidth than large ones.
// Every other op is memory bound: bytes / (memory_bandwidth * memory_efficiency),
//   backward bytes = Op::bytes_bwd, or kElementwiseBackwardBytesRatio x forward bytes
//   when the op leaves it 0 (reads dy and the saved input, writes dx). Op bytes are for
//   a 2-byte dtype and are doubled for fp32/tf32. Bytes are divided by tp for VocabParallel ops (the
//   loss works on V/tp logits) and for HeadParallel ops; Replicated ops run on s/tp
//   tokens (bytes / tp) with sequence parallelism; the Embedding lookup is not split.
// When the profile has a measured op_table with rows for the op's kind (the runtime's own
//   kernels, timed by `strata calibrate`), non-GEMM ops (the attention core included) take
//   their time from it instead (MeasuredOpTable), keyed by op_work().
// TP communication (Op::tp_comm) is NOT included: CollectiveCost charges it.
#pragma once
#include <map>

#include "costmodel/device_profile.h"
#include "costmodel/gemm_cost.h"
#include "costmodel/op_table.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "models/op.h"

namespace strata::costmodel {

// Backward bytes of a memory-bound op relative to its forward bytes.
inline constexpr double kElementwiseBackwardBytesRatio = 2.0;
// Fraction of the full attention matrix a causal flash kernel computes.
inline constexpr double kCausalAttentionFraction = 0.5;
// Flash-attention backward FLOPs relative to its forward FLOPs.
inline constexpr double kFlashBackwardFlopsRatio = 2.5;

// The size of a non-GEMM op on one rank, the key of the measured op_table: bytes moved
// (forward, scaled to `dtype` and divided per the sharding rules above) for memory-bound
// ops; for the attention core its forward model FLOPs / tp (full QK^T and AV, no causal
// factor). 0 for GEMM ops.
double op_work(const models::Op& op, int tp, bool sequence_parallel, DType dtype);

// The GEMM shape one TP rank runs for a GEMM op, sharded per Op::sharding (rules above).
models::GemmShape sharded_gemm(const models::Op& op, int tp, bool sequence_parallel);

// What the framework runs (from the SoftwareStack); the defaults are FlashAttention with
// fused elementwise kernels and no per-kernel overhead.
struct OpCostOptions {
  AttentionKernel attention = AttentionKernel::Flash2;
  bool softmax_fused = true;
  double attention_dropout = 0;
  bool fused_bias_gelu = true;
  bool fused_bias_dropout_add = true;
  bool fused_layernorm = true;
  bool rms_norm = false;  // the model's norm: with fused_layernorm false, composed in fp32
  bool fused_rope = true;
  bool attention_layout_copies = false;
  bool fused_cross_entropy = false;
  double kernel_overhead_s = 0;
  // Idle GPU time per launched kernel, GEMMs included (training_losses.h host_gap_us); not
  // charged on measured op_table rows.
  double host_gap_s = 0;
};
// The fraction of peak the stack's fused attention kernel reaches on `device` (cuDNN's own
// where the profile gives one, DeviceProfile::attention_cudnn_efficiency).
double attention_efficiency(const DeviceProfile& device, AttentionKernel kernel);

// The stack's kernels, with its kernel overhead or else the device profile's; `norm` is the
// model's (an unfused RMSNorm is composed of tensor ops, an unfused LayerNorm is PyTorch's
// native kernel).
OpCostOptions op_cost_options(const SoftwareStack& stack, const DeviceProfile& device,
                              models::Norm norm = models::Norm::LayerNorm);

// Non-GEMM kernels the framework launches for the op: {forward, backward}. GEMM ops: {0, 0}.
struct KernelCount {
  int fwd = 0, bwd = 0;
};
KernelCount kernel_count(const models::Op& op, const OpCostOptions& o);

struct OpTime {
  double fwd_s = 0;
  double bwd_s = 0;
  // Worst source among the parts (Roofline if any GEMM part came from the roofline;
  // non-GEMM ops are Roofline unless the measured op_table covers their kind).
  TimeSource source = TimeSource::Roofline;
};

class OpCost {
 public:
  explicit OpCost(const DeviceProfile& profile, const OpCostOptions& options = {});

  // tp >= 1 (InputError otherwise). Op shapes are for one micro-batch, unsharded.
  OpTime time(const models::Op& op, int tp, bool sequence_parallel, DType dtype) const;

  const GemmCost& gemm() const { return gemm_; }
  const OpCostOptions& options() const { return options_; }

 private:
  GemmCost gemm_;
  MeasuredOpTable ops_;
  std::map<DType, double> attention_flops_per_s_;  // peak * attention_efficiency
  double memory_bytes_per_s_ = 0;                  // bandwidth * memory_efficiency
  OpCostOptions options_;

  OpTime unfused_attention(const models::Op& op, int tp, DType dtype) const;
  double per_kernel_s() const { return options_.kernel_overhead_s + options_.host_gap_s; }
};

}  // namespace strata::costmodel
