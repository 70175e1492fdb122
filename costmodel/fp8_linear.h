// Fp8Linear: which GEMMs an FP8 training recipe runs in FP8 and the cast passes it adds,
// as Transformer Engine's delayed-scaling recipe under Megatron-Core does.
//
// In FP8: the transformer block's linear layers (QKV, attention output projection, MLP
// up / gate / down) and the routed experts' GEMMs. fp8_autocast reaches Transformer Engine
// modules only, and Megatron-Core builds exactly those layers from TE modules; the
// experts with --moe-grouped-gemm are TEGroupedMLP, whose fc1 / fc2 are TE GroupedLinear
// modules run under FP8 (megatron/core/transformer/moe/experts.py TEGroupedMLP, with its
// Fp8Padding of each expert's rows, and extensions/transformer_engine.py TEGroupedLinear:
// NVIDIA/Megatron-LM at d98e8a64ddf34856e74b24714e3bedb2f5a39553). Each expert GEMM runs
// at the FP8 rate at its own small shape, with its casts; the per-expert row padding to
// the FP8 alignment is not modelled, and the token dispatch stays bf16: Megatron-Core at
// d98e8a64 quantizes it only as mxfp8 on its 'ncclep' flex backend
// (TransformerConfig.moe_dispatch_fwd_dtype, which needs a Blackwell GPU's grouped GEMM),
// while its DeepEP and HybridEP paths and the alltoall / allgather dispatchers move bf16
// (fused_a2a.py: "Currently, we do not support fp8 dispatch"). Not in FP8: the attention
// core (FlashAttention / cuDNN fused attention, bf16 here), the LM head (Megatron-Core's
// output_layer is tensor_parallel.ColumnParallelLinear, not a TE module: NVIDIA/Megatron-LM
// megatron/core/models/gpt/gpt_model.py, commit 007562f9), the embedding, norms,
// elementwise ops and the optimizer (fp32 master weights and Adam moments).
//
// What te.Linear does under FP8 (NVIDIA/TransformerEngine
// transformer_engine/pytorch/module/linear.py, commit 0004dbd0, _Linear.forward/backward):
// the input is cast with fp8_cast_transpose_fused (an FP8 copy and its FP8 transpose for
// the wgrad GEMM); the weight is cast the same way (weight_fp8 and weight_t_fp8) only
// when is_first_microbatch says so, i.e. once per step; the output gradient is cast in
// the backward (grad_output_preprocess).
//
// Scaling overheads, per micro-batch, as memory-bound elementwise passes (assumption):
// every GEMM input the layer casts is read once in bf16 and written once in FP8 plus its
// FP8 transpose: kFp8CastBytesPerElement = 2 + 1 + 1 bytes. Forward casts the input X
// (m x k); backward casts the output gradient dY (m x n). The amax of each tensor comes
// out of the same cast kernel; the delayed-scaling amax reduction is a few floats per
// layer per step and not charged. The weight cast (k x n) is charged once per step
// (fp8_weight_cast_bytes). Norm + cast fusions (TE LayerNormLinear) would hide the QKV
// and MLP-up input casts; they are still charged (an upper bound on the overhead). TP
// all-gathers of activations stay bf16 unless the stack gathers the FP8 cast
// (SoftwareStack::fp8_tp_all_gather: TorchTitan's float8 TP). TE at that commit gathers FP8
// in some paths (te.Linear's input, the backward's output gradient) and bf16 in others
// (LayerNormLinear without userbuffers); the Megatron stacks keep bf16, the conservative side.
//
// Accumulation: te.Linear's forward GEMM keeps its partial sums in the tensor cores (fast
// accumulation) and its dgrad and wgrad GEMMs promote them to fp32 (TransformerEngine
// transformer_engine/pytorch/module/base.py at 0004dbd0: _2X_ACC_FPROP False, _2X_ACC_DGRAD
// and _2X_ACC_WGRAD True, passed as use_split_accumulator); torchao's float8 training does
// the same (pytorch/ao torchao/float8/config.py at eab345c2: gemm_config_output
// Float8GemmConfig(use_fast_accum=True), grad_input and grad_weight at the default False). The forward GEMMs therefore run Accumulation::Fast
// (costmodel/gemm_cost.h: the profile's fp8_fast_accum_speedup), the backward ones Split.
//
// Memory: the FP8 weight and its FP8 transpose, kFp8WeightCopyBytes per weight of those
// layers, beside the bf16 weights and fp32 master weights (MemoryInputs::fp8_weights).
// Activations saved for the backward: Linear, LayerNormLinear and GroupedLinear keep the FP8
// cast of their input for the weight gradient (1 byte per element; costmodel::ActivationStorage
// in memory_model.h says which inputs).
#pragma once
#include <cstdint>

#include "models/op.h"

namespace strata::costmodel {

inline constexpr double kFp8CastBytesPerElement = 4.0;  // read bf16, write fp8 + fp8 transpose
inline constexpr double kFp8WeightCopyBytes = 2.0;      // weight_fp8 + weight_t_fp8

// True for the ops an FP8 recipe runs as FP8 GEMMs (see above).
bool runs_in_fp8(models::OpKind k);

// Weights (k x n x gemm_count, unsharded) of an op an FP8 recipe runs in FP8; 0 for other ops.
double fp8_weights(const models::Op& op);

// Bytes the casts of one FP8 GEMM C(m,n) = X(m,k) W(k,n) (shape as one rank runs it)
// move per micro-batch, and the cast kernels launched.
struct Fp8CastWork {
  double fwd_bytes = 0, bwd_bytes = 0;
  int fwd_kernels = 0, bwd_kernels = 0;
};
Fp8CastWork fp8_activation_casts(std::int64_t m, std::int64_t n, std::int64_t k);

// Bytes of the once-per-step cast of `weights` FP8-run weights (bf16 -> fp8 + transpose).
inline double fp8_weight_cast_bytes(double weights) { return kFp8CastBytesPerElement * weights; }

}  // namespace strata::costmodel
