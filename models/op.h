// Op: one node of the model graph with everything the cost model needs, for one
// micro-batch of `micro_batch` sequences, *unsharded* (tp = 1). The cost model
// divides by tp according to `sharding`.
#pragma once
#include <optional>
#include <string_view>
#include <cstdint>
#include <string>

namespace strata::models {

enum class OpKind {
  Embedding,      // token (+ position) lookup
  Norm,           // LayerNorm / RMSNorm
  Qkv,            // fused QKV projection (GEMM)
  Rope,           // rotary position embedding (elementwise)
  AttentionCore,  // softmax(QK^T)V, flash-style
  OutProj,        // attention output projection (GEMM)
  MlpUp,          // h -> ffn (GEMM)
  MlpGate,        // h -> ffn gate (GEMM, SwiGLU only)
  Activation,     // GELU / SwiGLU elementwise
  MlpDown,        // ffn -> h (GEMM)
  Residual,       // residual add (+ dropout)
  LmHead,         // h -> vocab (GEMM)
  Loss,           // softmax cross-entropy
  Router,         // h -> experts logits (GEMM, replicated), MoE layers
  ExpertUp,       // h -> expert_ffn, one GEMM per routed expert (grouped GEMM)
  ExpertGate,     // h -> expert_ffn gate per routed expert (SwiGLU only)
  ExpertDown,     // expert_ffn -> h per routed expert
};

// How tensor parallelism splits the op (Megatron): column-parallel splits the GEMM's
// n (output features), row-parallel splits k, head-parallel splits heads,
// vocab-parallel splits the vocabulary, replicated ops run in full on each TP rank
// (or on s/tp tokens with sequence parallelism).
enum class Sharding { Replicated, ColumnParallel, RowParallel, HeadParallel, VocabParallel };

// The TP collective the op needs, named as the runtime's forward/backward pair
// (Megatron mappings.py). The runtime issues exactly these; the cost model charges them.
enum class TpComm {
  None,
  CopyForwardAllReduceBackward,             // f: before column-parallel (no SP)
  AllReduceForwardCopyBackward,             // g: after row-parallel (no SP)
  AllGatherForwardReduceScatterBackward,    // SP: before column-parallel
  ReduceScatterForwardAllGatherBackward,    // SP: after row-parallel
  VocabAllReduce,                           // vocab-parallel embedding / loss reductions
};

// The expert-parallel token exchange around the routed experts (Megatron-Core's
// all-to-all token dispatcher): tokens go to the ranks holding their experts before the
// first expert GEMM and come back after the last; the backward runs the reverse.
enum class EpComm {
  None,
  DispatchForwardCombineBackward,  // before expert_up: send each token's top_k copies out
  CombineForwardDispatchBackward,  // after expert_down: bring the expert outputs back
};

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;  // C(m,n) = A(m,k) B(k,n); m = micro_batch*seq tokens
  bool operator==(const GemmShape&) const = default;
};

// Shape of the attention core (set for OpKind::AttentionCore), unsharded: `batch`
// sequences of `seq` tokens, `heads` query heads sharing `kv_heads` K/V heads.
struct AttentionShape {
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  bool operator==(const AttentionShape&) const = default;
};

struct Op {
  std::string name;            // "layer3.qkv"
  OpKind kind = OpKind::Residual;
  int layer = 0;               // 0 = embedding group, 1..L = blocks, L+1 = head/loss group
  Sharding sharding = Sharding::Replicated;
  GemmShape gemm;              // set for GEMM ops, unsharded
  AttentionShape attention;    // set for the attention core, unsharded
  double flops_fwd = 0;        // forward matmul FLOPs: 2mnk for GEMMs, 4*b*s^2*h for the
                               // attention core (QK^T and AV, no causal halving: the model-FLOPs
                               // convention of Megatron's formulas; the cost model applies the
                               // causal factor). Elementwise ops count 0 (see bytes_fwd).
  double flops_bwd = 0;        // backward FLOPs: 2x forward for GEMMs (dgrad + wgrad) and the
                               // attention core
  double bytes_fwd = 0;        // memory traffic of the forward (read + write), 2-byte dtype;
                               // for GEMMs the operands A, B and C
  double bytes_bwd = 0;        // memory traffic of the backward (elementwise: 2x forward)
  double params = 0;           // parameter count owned by this op
  double shared_params = 0;    // parameters used but owned by another op (tied LM head uses
                               // the embedding table): a pipeline stage that holds this op
                               // without the owner keeps a copy; not in total_params()
  double logits = 0;           // OpKind::Loss: logit elements (tokens x vocab), unsharded; the
                               // cost model charges the stack's cross-entropy kernels on them
  double activation_bytes = 0; // bytes saved for backward (Korthikanti terms), unsharded
  double selective_recompute_bytes = 0;  // the part of activation_bytes that selective
                                         // recompute drops (attention scores: 5*a*s^2*b)
  TpComm tp_comm = TpComm::None;  // collective *before or after* the op (see tp_comm_bytes)
  double tp_comm_bytes = 0;    // message size of that collective, unsharded activation bytes
  // Mixture of experts.
  std::int64_t gemm_count = 1; // identical GEMMs of shape `gemm` the op runs (a grouped GEMM:
                               // one per routed expert, or per shared expert); flops, bytes
                               // and params above are the totals over all of them
  bool routed_expert = false;  // a routed-expert GEMM: `gemm.m` is the mean tokens one expert
                               // gets (tokens * top_k / experts, rounded up); its experts are
                               // split over ep and each expert over etp (not tp)
  double active_params = 0;    // parameters one token uses (= params except routed experts:
                               // params * top_k / experts)
  EpComm ep_comm = EpComm::None;
  double ep_comm_bytes = 0;    // bytes one rank's tokens send out in that exchange, unsharded:
                               // tokens * top_k * hidden * 2 (2-byte activations)
  // Every field (a new one too): the cost model tells ops that cost the same this way.
  bool operator==(const Op&) const = default;
};

const char* to_string(OpKind k);
// Inverse of to_string(OpKind); nullopt for an unknown name.
std::optional<OpKind> op_kind_from_string(std::string_view name);
const char* to_string(Sharding s);
const char* to_string(TpComm c);
const char* to_string(EpComm c);

// The graph is built without sequence parallelism. With it, Megatron replaces the
// all-reduce pair around each column/row-parallel region by all-gather / reduce-scatter
// over the same (unsharded) bytes; this maps the tag accordingly.
inline TpComm with_sequence_parallel(TpComm c) {
  switch (c) {
    case TpComm::CopyForwardAllReduceBackward: return TpComm::AllGatherForwardReduceScatterBackward;
    case TpComm::AllReduceForwardCopyBackward: return TpComm::ReduceScatterForwardAllGatherBackward;
    default: return c;
  }
}
inline bool is_gemm(OpKind k) {
  return k == OpKind::Qkv || k == OpKind::OutProj || k == OpKind::MlpUp ||
         k == OpKind::MlpGate || k == OpKind::MlpDown || k == OpKind::LmHead ||
         k == OpKind::Router || k == OpKind::ExpertUp || k == OpKind::ExpertGate ||
         k == OpKind::ExpertDown;
}

}  // namespace strata::models
