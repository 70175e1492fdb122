#include "models/op.h"

namespace strata::models {

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::Embedding: return "embedding";
    case OpKind::Norm: return "norm";
    case OpKind::Qkv: return "qkv";
    case OpKind::Rope: return "rope";
    case OpKind::AttentionCore: return "attention_core";
    case OpKind::OutProj: return "out_proj";
    case OpKind::MlpUp: return "mlp_up";
    case OpKind::MlpGate: return "mlp_gate";
    case OpKind::Activation: return "activation";
    case OpKind::MlpDown: return "mlp_down";
    case OpKind::Residual: return "residual";
    case OpKind::LmHead: return "lm_head";
    case OpKind::Loss: return "loss";
    case OpKind::Router: return "router";
    case OpKind::ExpertUp: return "expert_up";
    case OpKind::ExpertGate: return "expert_gate";
    case OpKind::ExpertDown: return "expert_down";
  }
  return "unknown";
}

std::optional<OpKind> op_kind_from_string(std::string_view name) {
  for (OpKind k : {OpKind::Embedding, OpKind::Norm, OpKind::Qkv, OpKind::Rope, OpKind::AttentionCore,
                   OpKind::OutProj, OpKind::MlpUp, OpKind::MlpGate, OpKind::Activation,
                   OpKind::MlpDown, OpKind::Residual, OpKind::LmHead, OpKind::Loss,
                   OpKind::Router, OpKind::ExpertUp, OpKind::ExpertGate, OpKind::ExpertDown})
    if (name == to_string(k)) return k;
  return std::nullopt;
}

const char* to_string(Sharding s) {
  switch (s) {
    case Sharding::Replicated: return "replicated";
    case Sharding::ColumnParallel: return "column_parallel";
    case Sharding::RowParallel: return "row_parallel";
    case Sharding::HeadParallel: return "head_parallel";
    case Sharding::VocabParallel: return "vocab_parallel";
  }
  return "unknown";
}

const char* to_string(TpComm c) {
  switch (c) {
    case TpComm::None: return "none";
    case TpComm::CopyForwardAllReduceBackward: return "copy_fwd_allreduce_bwd";
    case TpComm::AllReduceForwardCopyBackward: return "allreduce_fwd_copy_bwd";
    case TpComm::AllGatherForwardReduceScatterBackward: return "allgather_fwd_reducescatter_bwd";
    case TpComm::ReduceScatterForwardAllGatherBackward: return "reducescatter_fwd_allgather_bwd";
    case TpComm::VocabAllReduce: return "vocab_allreduce";
  }
  return "unknown";
}

const char* to_string(EpComm c) {
  switch (c) {
    case EpComm::None: return "none";
    case EpComm::DispatchForwardCombineBackward: return "dispatch_forward_combine_backward";
    case EpComm::CombineForwardDispatchBackward: return "combine_forward_dispatch_backward";
  }
  return "unknown";
}

}  // namespace strata::models
