// SoftwareStack: what the training framework does with a strategy. The same layout runs
// at different speeds under different frameworks and versions; a stack names the
// kernels (attention kernel, fused elementwise kernels), the precision, and which
// communication the framework overlaps with compute. The cost model and the memory model
// both read it, so time and memory always assume the same kernels (an unfused attention
// keeps the s x s scores for the backward pass, FlashAttention does not).
//
// YAML (costmodel/stacks/*.yaml, embedded; `--stack NAME|FILE`):
//   name: megatron-2021
//   description: "..."
//   framework: "NVIDIA/Megatron-LM"
//   version: "v2.x (spring 2021)"
//   precision: fp16                 # fp16 | bf16 | fp32 | tf32: GEMM/activation dtype
//   grad_reduce_dtype: fp32         # dtype of the data-parallel gradient reduction (and its buffer)
//   grad_comm_dtype: bf16           # optional: what the reduction sends when the stack casts the
//                                   # buffer for it (default grad_reduce_dtype)
//   zero1_grad_collective: all_reduce  # optional, ZeRO 1: reduce_scatter (default) | all_reduce
//   attention: {kernel: unfused, softmax_fused: true, dropout: 0.1}   # unfused | flash2 | flash1 | cudnn
//              layout_copies: false  # optional: GQA K/V repeat and output copies around the
//                                    # kernel (costmodel/eager_elementwise.h), default false
//   fusions: {bias_gelu: true, bias_dropout_add: true, layernorm: true, grad_accumulation: true,
//             rope: true}           # rope optional, default true (false: complex-multiply RoPE)
//   overlap: {tp_comm: false, tp_backward: false, grad_reduce: false, param_gather: false,
//             p2p: blocking}
//   grad_bucket_params: 0           # 0: one reduction after the backward; -1: max(40M, 1M x dp)
//   optimizer: fused_adam
//   distributed_optimizer: false
//   kernel_overhead_us: 4           # optional: fixed cost of each non-GEMM kernel
//   cp_comm_type: p2p               # optional: context-parallel K/V exchange, p2p | all_gather
//                                   # (default p2p, Megatron-LM's --cp-comm-type default)
//   zero_prefetch: true             # optional: ZeRO-3 gathers ahead of use (default true)
//   zero3_recompute_regather: true  # optional: under full recompute the re-run forward gathers
//                                   # the ZeRO-3 parameters again (default true, DeepSpeed)
//   zero3_gather: block             # optional: one ZeRO-3 all-gather per layer group (block,
//                                   # default: FSDP units) or per weight-holding module (module:
//                                   # DeepSpeed stage 3's per-submodule fetch)
//   zero3_gather_bucket_params: 0   # optional: consecutive modules' gathers coalesced up to this
//                                   # many parameters (DeepSpeed >= 0.6 prefetch bucket); 0: none
//   zero3_fetch_host_us: 0          # optional: host time per ZeRO-3 gather on the critical path
//   zero3_persist_params: 0         # optional: a module with at most this many parameters keeps
//                                   # them whole on every rank and is never gathered (DeepSpeed's
//                                   # stage3_param_persistence_threshold; default 0)
//   selective_recompute_modules: [per_op]   # optional: what recompute selective re-runs here
//   grad_buffer: {zero: true, nan_check: false, scale: true}   # optional, default all false:
//                                   # passes over the gradient buffer every iteration
//   sources: {precision: {ref: ..., commit: ..., status: P}, ...}   # one per setting
// Every setting cites where it comes from (`sources:`); `strata stacks` prints them.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "costmodel/cp_comm_type.h"
#include "costmodel/device_profile.h"
#include "costmodel/recompute_modules.h"

namespace strata::costmodel {

enum class AttentionKernel {
  Unfused,  // QK^T and AV as batched GEMMs over the full s x s scores, softmax (+ dropout) passes
  Flash2,   // FlashAttention-2: causal tiles only, no s x s tensor in memory
  Flash1,   // FlashAttention's first algorithm (CUDA v1, or its Triton port): flash2's shape of
            // cost at the device's attention_flash1 efficiency where it has one
  Cudnn,    // cuDNN fused attention (Transformer Engine): same shape of cost as flash
};
const char* to_string(AttentionKernel k);

// Unit of a ZeRO-3 parameter all-gather (SoftwareStack::zero3_gather).
enum class Zero3Gather { Block, Module };
const char* to_string(Zero3Gather g);

enum class P2pMode {
  Blocking,  // the stage waits for its send to complete before computing on
  Async,     // sends run on a communication stream beside compute
  AsyncInterleaved,  // async under the interleaved schedule, blocking otherwise (Megatron-Core)
};
const char* to_string(P2pMode p);

// What a framework version can run at all: the search offers nothing else and simulate
// refuses the rest by name (a 2021 Megatron-LM has no sequence parallelism to plan with).
// YAML `supports: {tensor_parallel, pipeline_parallel, sequence_parallel, selective_recompute, zero:
// max stage, zero_with_pp: max stage with pp > 1, context_parallel, experts}`, each optional
// (default: supported).
struct StackSupport {
  bool tensor_parallel = true;
  bool pipeline_parallel = true;
  bool sequence_parallel = true;
  bool selective_recompute = true;
  int max_zero = 3;
  // Highest ZeRO stage next to pipeline parallelism (DeepSpeed's pipeline engine asserts
  // stage <= 1).
  int max_zero_with_pp = 3;
  bool context_parallel = true;
  bool experts = true;
  // Megatron-Core's batch-level EP overlap (--overlap-moe-expert-parallel-comm,
  // Strategy::ep_overlap): 2025 Megatron-Core only, so off unless a stack says it runs it.
  bool ep_overlap = false;
};

// The MoE token dispatcher a stack runs (SoftwareStack::moe_dispatcher).
enum class MoeDispatcher { AllToAll, AllGather, DeepEp };
const char* to_string(MoeDispatcher d);

struct SoftwareStack {
  std::string name;
  std::string description;
  std::string framework;
  std::string version;
  DType precision = DType::Bf16;
  DType grad_reduce_dtype = DType::Fp32;
  // What the data-parallel reduction sends when the stack casts its gradient buffer for it
  // (DeepSpeed's communication_data_type: the bf16 optimizer keeps fp32 gradients and reduces
  // them in bf16); grad_reduce_dtype, the buffer's, when the stack does not say.
  DType grad_comm_dtype = DType::Fp32;
  // With ZeRO 1: the gradients all-reduced whole instead of reduce-scattered (DeepSpeed's bf16
  // optimizer reduces the whole buffer and then steps on its own slice).
  bool zero1_grad_all_reduce = false;
  AttentionKernel attention = AttentionKernel::Flash2;
  bool softmax_fused = true;
  double attention_dropout = 0.0;
  bool fused_bias_gelu = true;
  bool fused_bias_dropout_add = true;
  // false: PyTorch's native layer_norm for LayerNorm models (as fused); an RMSNorm composed
  // of fp32 tensor ops (costmodel/eager_elementwise.h) for RMSNorm models.
  bool fused_layernorm = true;
  bool fused_rope = true;  // false: RoPE as an eager complex multiply (eager_elementwise.h)
  // The attention module copies K/V (GQA repeat) and its output around the kernel.
  bool attention_layout_copies = false;
  bool fused_cross_entropy = false;  // Megatron-LM --cross-entropy-loss-fusion (off by default)
  // Weight gradients accumulated by the wgrad GEMM into the main gradient buffer; when
  // false, each micro-batch's backward writes a fresh gradient that a separate kernel
  // adds into .grad (read both, write the sum) in the parameters' dtype.
  bool fused_grad_accumulation = true;
  bool overlap_tp_comm = false;     // TE userbuffers: TP collectives pipelined with GEMMs (SP)
  // Column-parallel backward (Megatron's async TP communication): the input gradient's
  // all-reduce / reduce-scatter beside the wgrad GEMM, SP's re-done all-gather beside dgrad.
  bool overlap_tp_backward = false;
  // SMs a userbuffers collective kernel holds while it runs beside its GEMM (Transformer
  // Engine's "pipeline" and "bulk" overlaps); 0 = not charged. The "ring_exchange"
  // overlaps move data with the copy engines and are not charged.
  int tp_comm_sms = 0;
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = false;
  P2pMode p2p = P2pMode::Async;
  // -1: Megatron-Core's default bucket (max(40M, 1M x dp) parameters); 0: the whole
  // gradient reduced once after the backward; > 0: that many parameters per bucket.
  std::int64_t grad_bucket_params = -1;
  std::string optimizer = "fused_adam";
  bool distributed_optimizer = false;
  // Fixed time of each non-GEMM kernel (launch and tail) in microseconds; -1: the
  // device profile's value.
  double kernel_overhead_us = -1;
  // FP8 recipes only: the weights of the FP8-run linear layers are kept in FP8 alone (TE
  // fp8_model_init; NeMo fp8_params, Megatron-LM --fp8-param-gather): no 16-bit copy beside
  // the FP8 weight and its transpose (costmodel/memory_model.h).
  bool fp8_params = false;
  // What `recompute: selective` without modules re-runs on this stack (YAML
  // selective_recompute_modules, e.g. [per_op] for TorchTitan); none = strata's selective
  // mode, the attention core (recompute_modules.h).
  RecomputeModules selective_recompute{};
  // How MoE tokens reach experts on other ranks (costmodel/expert_dispatch_cost.h), YAML
  // moe_dispatcher: alltoall = Megatron-Core's alltoall dispatcher, one send per routed copy
  // (the default); allgather = its allgather dispatcher (Megatron-LM's default
  // --moe-token-dispatcher-type): every token of the etp x ep group gathered to every rank of
  // it, the experts' outputs reduce-scattered back; deepep = a once-per-node dispatcher
  // (DeepEP's internode kernels through Megatron-Core's flex dispatcher): a token crosses to
  // each node it needs once, over RDMA, and is forwarded to that node's experts over NVLink.
  MoeDispatcher moe_dispatcher = MoeDispatcher::AllToAll;
  bool moe_once_per_node() const { return moe_dispatcher == MoeDispatcher::DeepEp; }
  // The MoE dispatcher reads the routing result to the host in every MoE layer's forward
  // (Megatron-Core's dropless dispatchers size their buffers from the per-expert token counts):
  // the CPU cannot queue work ahead of the GPU there, so each such layer's forward takes at
  // least the CPU time that issues it (TrainingLosses::moe_host_ms).
  bool moe_host_sync = false;
  // Megatron-Core's --moe-shared-expert-overlap: the shared experts run
  // on a side stream while the token exchange of the same layer is in flight, their forward
  // beside the dispatch and combine, their backward beside the backward's; each direction's
  // exchange is hidden up to the shared experts' time in that direction.
  bool moe_shared_expert_overlap = false;
  // The routing probabilities are applied inside the routed experts' activation (Megatron-Core
  // r0.13 and later: weighted SwiGLU, probabilities permuted with the tokens), so the token
  // combine keeps no copy of the experts' output for its backward: 2h bytes less per routed copy
  // (costmodel/memory_model.h). Earlier releases weight the output in the unpermute and keep it.
  bool moe_probs_in_activation = false;
  // Under an FP8 recipe with sequence parallelism, the tensor-parallel all-gathers that feed an
  // FP8 GEMM carry the FP8 cast (1 byte per element), not the 16-bit activation: the forward's
  // gather of a column-parallel input and the backward's gather of a row-parallel output
  // gradient (and the backward's re-gather of the input for the weight gradient). The
  // reduce-scatters (GEMM outputs) stay 16-bit. TorchTitan's float8 TP (torchao
  // PrepareFloat8ModuleInput, Float8ColwiseParallel, Float8RowwiseParallel). Default false:
  // every TP collective at the activation dtype.
  bool fp8_tp_all_gather = false;
  // The sequence-parallel collectives gather and scatter along the sequence dimension of a
  // batch-first [batch, seq, hidden] activation through NCCL's dim-0 collectives, so each
  // all-gather's output and each reduce-scatter's input is re-laid out by a copy of the whole
  // tensor on the compute stream (PyTorch functional collectives all_gather_tensor /
  // reduce_scatter_tensor with gather / scatter dim 1: torch.cat of the chunks; DTensor's
  // Shard(1) <-> Replicate / Partial redistributions in TorchTitan's tensor parallelism).
  // Megatron keeps activations sequence-first [seq, batch, hidden] and gathers dim 0 in place.
  // Default false: no copies.
  bool sp_collective_copies = false;
  // What a column-parallel linear layer keeps for its weight gradient under sequence
  // parallelism. True (Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication): the
  // sequence shard, so the backward all-gathers the input again. False (DTensor, as TorchTitan
  // runs it): autograd keeps the gathered input the matmul saw, and the backward gathers again
  // only where activation checkpointing dropped it and re-runs the gather there: TorchTitan's
  // per-op selective AC saves matmuls and reduce-scatters but re-runs the all-gathers; full
  // recompute re-runs the whole forward, whose own gather serves the backward.
  bool sp_backward_regather = true;
  // Bytes per logit the loss holds at its peak (the memory model's logits term), beside every
  // activation of the micro-batch: the LM head's 16-bit logits and the copies the cross-entropy
  // makes. Megatron's vocab-parallel cross-entropy (fused or not) works in place on an fp32
  // copy: 2 + 4 = 6. PyTorch's F.cross_entropy on an fp32 copy keeps log_softmax's fp32 output,
  // and its backward holds that, nll_loss's dense fp32 gradient and log_softmax's: 12. Default 4
  // (fp32 logits only: strata's CPU runtime).
  double loss_bytes_per_logit = 4.0;
  // FSDP2 mixed precision (MixedPrecisionPolicy(param_dtype=bf16)): the sharded parameters are
  // the fp32 weights the optimizer steps, cast to bf16 at each all-gather, so under ZeRO-3 no
  // separate 16-bit shard is kept (the memory model's weights hold only the gathered groups).
  bool sharded_params_fp32 = false;
  StackSupport supports;
  // How context-parallel ranks exchange K/V (costmodel/context_parallel_cost.h).
  CpCommType cp_comm = CpCommType::P2p;
  // ZeRO-3 parameter all-gathers issued ahead of use, beside the previous layer's compute
  // (costmodel/zero_sharding.h).
  bool zero_prefetch = true;
  // ZeRO-3 under full recompute: the recomputed forward gathers the layer's parameters again
  // (DeepSpeed stage 3), or reuses the gather of the backward that runs it (Megatron-FSDP)
  // (costmodel/zero_sharding.h).
  bool zero3_recompute_regather = true;
  // What one ZeRO-3 parameter all-gather covers: a whole layer group (FSDP's per-block units,
  // Megatron-FSDP) or each module that holds weights (DeepSpeed stage 3 fetches submodules
  // one by one from their pre-forward and pre-backward hooks), whose count sets how many
  // collective latencies a pass pays (costmodel/zero_sharding.h).
  Zero3Gather zero3_gather = Zero3Gather::Block;
  // Modules with at most this many parameters are persisted: kept whole on every rank and
  // never gathered (DeepSpeed stage3_param_persistence_threshold). 0: none.
  double zero3_persist_params = 0;
  // Module gathers merged into one collective up to this many parameters (0: one per module).
  double zero3_gather_bucket_params = 0;
  // Host time per ZeRO-3 gather that the GPU waits for (a framework that synchronises on
  // each gather, DeepSpeed <= 0.5): microseconds.
  double zero3_fetch_host_us = 0;
  // Memory passes over the whole local gradient buffer (grad_reduce_dtype) once per
  // iteration, outside the backward and the optimizer: zero-filled before the first
  // micro-batch (Megatron's zero_grad_buffer), an L2 norm read before each bucket's
  // reduction to catch NaNs (Megatron-Core check_for_nan_in_grad), and scaled in place by
  // 1/dp before a sum reduction (read + write) instead of averaging in the collective.
  bool grad_buffer_zero = false;
  bool grad_buffer_nan_check = false;
  bool grad_buffer_scale = false;
  // dotted setting key -> "ref (commit ...; status ...): note".
  std::map<std::string, std::string> sources;
  std::string file;  // where it was read from (catalog path or user file)

  bool flash_like() const { return attention != AttentionKernel::Unfused; }
};

SoftwareStack parse_software_stack(const std::string& yaml_text, const std::string& source);
// A catalog name (`strata stacks`) or a YAML path; InputError with close names otherwise.
SoftwareStack load_software_stack(const std::string& name_or_path);
// The same stack with `settings` (a map of stack keys, nested maps merged key by key) laid over
// its YAML before it is read: what one job changed of the stack it ran (a runs row's
// stack_settings). Every key is checked as in a stack file; `what` names the settings in errors.
SoftwareStack load_software_stack(const std::string& name_or_path, const YAML::Node& settings,
                                  const std::string& what);
std::vector<std::string> software_stack_catalog_names();
// The stack used when none is named: the newest catalog stack for GPU devices; the
// device profile's `default_stack` when it names one (CPU ranks run strata's own runtime).
std::string default_software_stack_name(const DeviceProfile& device);
// Bucket size in parameters for a DP group of `dp` ranks (grad_bucket_params resolved).
double grad_bucket_params(const SoftwareStack& s, int dp);

}  // namespace strata::costmodel
