// Op: one node of the model graph with everything the cost model needs, for one
// micro-batch of `micro_batch` sequences, *unsharded* (tp = 1). The cost model
// divides by tp according to `sharding`.
#pragma once
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

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;  // C(m,n) = A(m,k) B(k,n); m = micro_batch*seq tokens
};

struct Op {
  std::string name;            // "layer3.qkv"
  OpKind kind = OpKind::Residual;
  int layer = 0;               // 0 = embedding group, 1..L = blocks, L+1 = head/loss group
  Sharding sharding = Sharding::Replicated;
  GemmShape gemm;              // set for GEMM ops, unsharded
  double flops_fwd = 0;        // forward FLOPs (2mnk for GEMMs)
  double flops_bwd = 0;        // backward FLOPs (dgrad + wgrad = 2x forward for GEMMs)
  double bytes_fwd = 0;        // memory traffic of the forward (elementwise ops), 2-byte dtype
  double params = 0;           // parameter count owned by this op
  double activation_bytes = 0; // bytes saved for backward (Korthikanti terms), unsharded
  TpComm tp_comm = TpComm::None;  // collective *before or after* the op (see tp_comm_bytes)
  double tp_comm_bytes = 0;    // message size of that collective, unsharded activation bytes
};

const char* to_string(OpKind k);
const char* to_string(TpComm c);
inline bool is_gemm(OpKind k) {
  return k == OpKind::Qkv || k == OpKind::OutProj || k == OpKind::MlpUp ||
         k == OpKind::MlpGate || k == OpKind::MlpDown || k == OpKind::LmHead;
}

}  // namespace strata::models
