// MemoryModel: bytes per rank for each pipeline stage of a strategy (DESIGN.md).
// Inputs are plain fields so the cost model does not depend on the planner.
//
// Weights, gradients, optimizer (mixed-precision Adam, 18 bytes/param):
//   2 (bf16 weights) + 4 (fp32 gradient accumulation buffer) + 12 (fp32 master
//   weights, Adam m, Adam v); an fp32 run holds 4 + 4 + 8 = 16 (weights stepped in place,
//   MemoryInputs::weight_bytes / optimizer_state_bytes). The gradient buffer holds the stack's grad_reduce_dtype
//   (MemoryInputs::grad_buffer_bytes): Megatron-Core's DDP allocates it in fp32 with
//   grad_reduce_in_fp32, else in the parameters' dtype. A buffer narrower than fp32 adds
//   the fp32 copy the mixed-precision optimizer makes of the gradients it steps (Megatron's
//   _copy_model_grads_to_main_grads: .float() of each gradient), 4 bytes per parameter of
//   the optimizer's shard: fp16 grads without ZeRO 2 + 4 = 6 bytes, a bf16 buffer with the
//   distributed optimizer 2 + 4/dp. That copy exists only during the optimizer step: train_step
//   calls optimizer.zero_grad() (set_to_none=True, "the space ... can be safely deallocated")
//   before the next forward (Megatron-LM v2.5 megatron/training.py + optimizer/optimizer.py;
//   the same at d98e8a64 in distrib_optimizer.py), when the activations and logits are freed,
//   so the peak holds the larger of the two, not both (StageMemory::step_extra_bytes).
//   ZeRO-1 shards the 12 optimizer bytes over dp;
//   ZeRO-2 also shards gradients; ZeRO-3 also weights, and then holds two layer groups'
//   gathered bf16 parameters (the one in use and the prefetched next: 2 x 2 bytes x the
//   largest group's parameters on the stage). Parameters of TP-sharded ops
//   (Column/Row/Head/VocabParallel) are divided by tp; replicated ops (norms, biases
//   of row-parallel layers counted with their op) are not. With tied embeddings the
//   LM head's Op::shared_params (the embedding table) is charged again, /tp, on a
//   pipeline rank that does not also hold the embedding group.
//   FP8 recipe (MemoryInputs::fp8_weights): + kFp8WeightCopyBytes (2: the FP8 weight and
//   its FP8 transpose) per weight of the FP8-run linear layers (costmodel/fp8_linear.h),
//   /tp, and / (dp x cp) under ZeRO-3; nothing added with fp8_params (the FP8 pair takes
//   the 16-bit weight's place).
// Activations per transformer layer, one micro-batch (Korthikanti et al. 2022,
//   "Reducing Activation Recomputation in Large Transformer Models", Table 2),
//   s = seq, b = micro_batch, h = hidden, a = heads, t = tp, 2-byte activations:
//   replicated part  R = 10 sbh  (2 LayerNorm inputs 4sbh, QKV input 2sbh, MLP input
//                                 2sbh, 2 dropout masks 2sbh)
//   sharded part     S = 24 sbh + 5 a s^2 b  (Q,K 4sbh, V 2sbh, out-proj input 2sbh,
//                                 MLP 16sbh; softmax 2as^2b, its dropout mask as^2b
//                                 and output 2as^2b)
//   none:           R + S/t   (t = 1: sbh(34 + 5as/h); SP: (R + S)/t)
//   with SP:        (R + S)/t = sbh(34/t + 5as/(ht))
//   selective:      the 5as^2b term is recomputed (dropped)
//   The 5 in 5as^2b is the attention kernel's (MemoryInputs::attention_score_bytes):
//   2 for unfused attention without dropout, 0 for flash / cuDNN fused attention.
//   full:           2sbh per layer (the layer input), /t with SP; plus, once per rank, the
//                   whole activations of the layer the backward re-runs (the rank's largest),
//                   beyond the logits on the head's rank (StageMemory::recompute_layer_bytes)
//   Generalised shapes: Q,K,V use kv_heads (2sb(h + 2*kv_dim) for Q,K,V), the MLP term
//   is 4sbf for GELU (f = ffn) and 6sbf for SwiGLU (gate, up, product).
// Embedding group (first stage): the embedding dropout mask sbh (/t with SP).
// Head group (last stage): final-norm input and LM-head input 4sbh (/t with SP);
//   logits separately: loss_bytes_per_logit * b * s * V / t bytes (4: fp32 for the loss), for the
//   micro-batches in flight on the last stage (MemoryInputs::head_in_flight).
//   Multi-token prediction (ModelSpec::mtp_layers, in the head group as Megatron-Core places
//   it): per depth 12sbh (/t with SP: enorm and hnorm inputs, eh_proj's 2h input, its
//   final-norm and LM-head inputs), one block like the last (the per-layer terms below), and
//   one more set of fp32 logits. Its weights (norms, eh_proj, the block, experts sharded
//   like the others) are the head group's; the shared embedding table is a copy on the last
//   rank when the embedding is elsewhere (Op::shared_params of mtp.embedding).
// Activations of a stage = in-flight (micro-batch, chunk) forwards x the mean per-
//   chunk activation of the rank's chunks. Default in-flight, if not given:
//   vpp == 1: pp - p (1F1B); vpp > 1: Megatron interleaved warm-up
//   2(pp - p - 1) + (vpp - 1) pp + 1; both capped at microbatches * vpp when known.
//   GPipe holds all micro-batches: pass in_flight explicitly (schedule.h gives it).
// Context parallel (cp ranks share each sequence, costmodel/context_parallel_cost.h): every
//   activation above and the logits hold s/cp tokens, so they divide by cp (the scores
//   term too: s/cp queries against s keys); weights are replicated over cp, and the
//   ZeRO shards are taken over the dp x cp ranks (Megatron-Core reduces gradients and
//   shards the distributed optimizer over its data-parallel-with-cp group).
// Mixture of experts: routed-expert parameters (Op::routed_expert) are divided by ep * etp,
//   and ZeRO shards their optimizer state (gradients, weights) over edp instead of dp.
//   An MoE layer's activations replace the dense MLP's 6sbf (SwiGLU) by, per rank,
//   (s*b/t)*(4*experts + top_k*factor*(4h + mlp(expert_ffn)/etp)) for the routed experts
//   (router probabilities fp32; per token copy its permuted input, the expert activations
//   and the output kept for the combine; factor = load imbalance or capacity factor) and
//   mlp(shared_experts*shared_expert_ffn)/t for the shared experts; t = tp (Megatron
//   requires sequence parallelism for MoE with tp > 1). Latent attention (MLA) uses its
//   own Q, K, V widths and keeps its latents (replicated over TP).
// How the framework stores some of these (ActivationStorage):
//   FP8 recipe (fp8_gemm_inputs): Transformer Engine keeps, for the weight gradient, the FP8
//   cast of an FP8 GEMM's input (1 byte) instead of the 16-bit input: the QKV and a dense
//   MLP's fc1 input (LayerNormLinear's FP8 norm output) sbh each instead of 2sbh, the fc2
//   input f instead of 2f per token (dense and per routed copy), a routed copy's expert fc1
//   input h instead of 2h (GroupedLinear). Not cast: the attention output (the fused kernel
//   keeps it in 16 bits for its own backward, and Megatron-Core since 781e765818 lets the
//   out-projection save that original), the router's input (a 16-bit linear), Q, K, V.
//   A layer norm discarded by recompute still leaves the FP8 casts its GEMMs keep.
//   moe_probs_in_activation: the combine keeps no copy of the experts' output (2h less per
//   routed copy): Megatron-Core r0.13 and later weight the experts' activation instead.
//   gathered_gemm_inputs: with sequence parallelism the norm outputs the QKV and a dense
//   MLP-up GEMM keep are the gathered tensors (DTensor's matmul saves what it was handed), not
//   divided by tp as Megatron's shards are.
// Reserve: profile.reserve_gib (workspace, allocator fragmentation, framework).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "costmodel/device_profile.h"
#include "costmodel/recompute_modules.h"
#include "models/model_graph.h"

namespace strata::costmodel {

enum class RecomputeMode { None, Selective, Full };
const char* to_string(RecomputeMode r);                  // "none" | "selective" | "full"
RecomputeMode recompute_from_string(const std::string& s);  // InputError on unknown

// Bytes kept for the backward per attention score (one head, one query, one key), by
// attention kernel: unfused with dropout keeps the softmax output (2), the dropout mask
// (1) and the dropout output (2) = Korthikanti's 5as^2b; without dropout only the softmax
// output (2); FlashAttention / cuDNN fused attention keep no score tensor (they recompute
// the tiles in the backward from Q, K, V and the row log-sum-exp).
inline constexpr double kUnfusedScoreBytes = 5.0;
inline constexpr double kUnfusedNoDropoutScoreBytes = 2.0;
inline constexpr double kFlashScoreBytes = 0.0;

// How the framework stores what the backward needs, where that differs by precision and
// release (see the header comment).
struct ActivationStorage {
  bool fp8_gemm_inputs = false;          // the FP8 recipe: FP8 GEMM inputs kept in FP8
  bool moe_probs_in_activation = false;  // SoftwareStack::moe_probs_in_activation
  // Under sequence parallelism the QKV and MLP-up GEMMs keep the gathered norm output, whole
  // on every TP rank, instead of its sequence shard (DTensor: SoftwareStack::sp_backward_regather
  // false).
  bool gathered_gemm_inputs = false;
};

// Bytes per parameter of the fp32 gradient copy the mixed-precision optimizer makes of the
// parameters it steps, given the gradient buffer's bytes per parameter: 4 when the buffer
// is narrower than fp32, none when the buffer already is fp32 (see the header comment).
inline double optimizer_grad_copy_bytes(double grad_buffer_bytes) {
  return grad_buffer_bytes < 4.0 ? 4.0 : 0.0;
}

struct MemoryInputs {
  int tp = 1, pp = 1, dp = 1, vpp = 1;
  int cp = 1;                         // context parallel ranks per sequence
  // Expert parallelism (MoE): routed-expert parameters are split over ep x etp; their
  // ZeRO shards over edp = tp * cp * dp / (ep * etp) (costmodel/expert_dispatch_cost.h).
  int ep = 1, etp = 1;
  std::int64_t micro_batch = 1;
  std::int64_t num_microbatches = 0;  // per iteration per dp rank; 0 = unknown (no cap)
  int zero = 0;                       // 0..3
  RecomputeMode recompute = RecomputeMode::None;
  RecomputeModules recompute_modules;  // with RecomputeMode::Selective (see RecomputeModules)
  // With RecomputeMode::Full: only the first n blocks of each model chunk (stage_layers entry)
  // keep just their input, the others all their activations (Megatron's block method); 0 = all.
  int recompute_layers = 0;
  bool sequence_parallel = false;
  double attention_score_bytes = kUnfusedScoreBytes;  // see kUnfusedScoreBytes
  double grad_buffer_bytes = 4.0;     // per parameter: the gradient reduction dtype's size (2 or 4)
  // Per parameter: the weights in the training dtype (2 in mixed precision, 4 in fp32/tf32)
  // and the optimizer state (fp32 master weights + Adam m and v = 12 in mixed precision;
  // m and v only = 8 when the weights are fp32 and stepped in place, as strata's CPU runtime
  // does: runtime/adamw.h).
  double weight_bytes = 2.0;
  double optimizer_state_bytes = 12.0;
  // FP8 recipe (costmodel/fp8_linear.h): the FP8 copies of the linear layers' weights,
  // kFp8WeightCopyBytes per weight, sharded like the weights (tp; dp x cp under ZeRO-3).
  bool fp8_weights = false;
  // ...kept in FP8 alone (SoftwareStack::fp8_params): the FP8 weight and its transpose take
  // the place of the 16-bit weight (same 2 bytes) instead of adding to it.
  bool fp8_params = false;
  // Layer groups (0 = embedding, 1..L = blocks, L+1 = head) of each virtual stage,
  // pp * vpp entries; pipeline rank p holds virtual stages p, p + pp, p + 2pp, ...
  // Empty: an even split by layer count (embedding on the first, head on the last).
  std::vector<std::vector<int>> stage_layers;
  // Peak (micro-batch, chunk) forwards whose activations pipeline rank p holds; pp
  // entries. Empty: the defaults above.
  std::vector<int> in_flight;
  ActivationStorage storage;
  // Micro-batches whose logits the head's rank holds at its peak; 0: ceil(in-flight /
  // vpp). Megatron's 1F1B and interleaved schedules run the last chunk's backward right
  // after its forward (1; 2 with the batch-level EP overlap), GPipe holds every micro-batch.
  int head_in_flight = 0;
  // Under ZeRO-3 the sharded parameters are the optimizer's fp32 weights (FSDP2 mixed precision,
  // SoftwareStack::sharded_params_fp32): no 16-bit shard beside them, only the gathered groups.
  bool sharded_params_fp32 = false;
  // Bytes per logit of the loss at its peak (SoftwareStack::loss_bytes_per_logit; 4 = fp32).
  double loss_bytes_per_logit = 4.0;
};

struct StageMemory {
  double weights_bytes = 0;
  double grads_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;
  double logits_bytes = 0;
  double reserve_bytes = 0;
  // The optimizer step's fp32 gradient copy (optimizer_grad_copy_bytes): held only through the
  // step, after the activations and logits are freed; the total counts what it needs beyond
  // them (step_extra_bytes, usually 0).
  double step_grad_copy_bytes = 0;
  double step_extra_bytes = 0;
  // Full recompute: the activations of the one layer the backward re-runs (the rank's largest),
  // held beside the stored layer inputs; activations_bytes includes what it needs beyond the
  // logits (the loss's peak is freed before the first re-run).
  double recompute_layer_bytes = 0;
  double total_bytes = 0;   // weights + grads + optimizer + activations + logits + step extra + reserve
  double params = 0;        // parameters held by this rank (after TP sharding)
  double expert_params = 0; // of which routed-expert parameters (after ep x etp sharding)
  // Breakdown (parts of the totals above): the routed experts' weights, and their gradients
  // and optimizer state (ZeRO shards over edp, not dp); the routed-token activations of the
  // MoE layers (router probabilities, dispatched copies and expert activations); the
  // multi-token-prediction depths' activations and extra logits (head rank only).
  double expert_weights_bytes = 0;
  double expert_grads_optimizer_bytes = 0;
  double dispatch_activations_bytes = 0;
  double mtp_activations_bytes = 0;
};

// Per-layer activation bytes of one micro-batch (the formulas above), exposed for
// the planner's reports and for tests. `layer` (1-based) selects an MoE or dense block;
// 0 = a dense block.
double layer_activation_bytes(const models::ModelSpec& spec, std::int64_t micro_batch, int tp,
                              bool sequence_parallel, RecomputeMode recompute,
                              double score_bytes = kUnfusedScoreBytes, std::int64_t layer = 0,
                              int etp = 1, const RecomputeModules& modules = {},
                              const ActivationStorage& storage = {});
// Of the above, an MoE layer's routed part per rank: (s*b/t)*(4*experts + top_k*factor*
// (4h + mlp(expert_ffn)/etp)) less what recompute modules drop; 0 for a dense layer.
double routed_activation_bytes(const models::ModelSpec& spec, std::int64_t micro_batch, int tp,
                               RecomputeMode recompute, std::int64_t layer, int etp = 1,
                               const RecomputeModules& modules = {},
                               const ActivationStorage& storage = {});

class MemoryModel {
 public:
  MemoryModel(const models::ModelGraph& graph, const DeviceProfile& device);

  // One entry per pipeline rank (size pp). InputError on inconsistent inputs
  // (non-positive sizes, stage_layers not covering every group exactly once, ...).
  std::vector<StageMemory> per_stage(const MemoryInputs& in) const;
  // Largest total over stages.
  double peak_bytes(const MemoryInputs& in) const;

 private:
  models::ModelSpec spec_;
  std::vector<double> group_params_sharded_;     // per layer group: TP-sharded op params
  std::vector<double> group_params_replicated_;  // per layer group: replicated op params
  std::vector<double> group_params_shared_;      // per layer group: tied params it uses (LM head)
  std::vector<double> group_params_expert_;      // per layer group: routed-expert params
  std::vector<double> group_fp8_weights_;        // per layer group: FP8-run weights (TP-sharded)
  std::vector<double> group_fp8_expert_weights_;  // ... of routed experts (split over ep x etp)
  double reserve_bytes_ = 0;
};

}  // namespace strata::costmodel
