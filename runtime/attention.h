// Causal multi-head attention with grouped-query K/V (GQA), forward and backward side
// by side, plus the head (un)permutes around it. Layouts (row-major):
//   qkv  (B*S, (H + 2*KV) * D)   output of the QKV projection: [q heads | k heads | v heads]
//   q    (B, H, S, D)            k, v (B, KV, S, D)
//   probs(B, H, S, S)            softmax(q k^T / sqrt(D)) with j > i masked to 0
//   o    (B, H, S, D)            y (B*S, H*D): o with heads merged back per token
// Query head h reads K/V head h / (H / KV).
// Context parallel: the queries are a rank's chunks of the sequence (seq rows whose
// positions are q_positions[i]) and the keys/values the whole sequence (kv_seq rows in
// position order); query i attends to keys 0..q_positions[i]. probs is then
// (B, H, seq, kv_seq) and k, v, dk, dv are (B, KV, kv_seq, D).
#pragma once
#include <cstddef>

namespace strata::runtime {

struct AttentionShape {
  std::size_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  std::size_t kv_seq = 0;                       // 0: seq (queries and keys are the same tokens)
  const std::size_t* q_positions = nullptr;     // null: query i has position i
  std::size_t keys() const { return kv_seq == 0 ? seq : kv_seq; }
  std::size_t limit(std::size_t i) const { return q_positions != nullptr ? q_positions[i] : i; }
  std::size_t q_width() const { return heads * head_dim; }
  std::size_t kv_width() const { return kv_heads * head_dim; }
  std::size_t qkv_width() const { return q_width() + 2 * kv_width(); }
};

// qkv (B*S, qkv_width) -> q, k, v in head-major layout.
template <typename T>
void split_heads_forward(T* q, T* k, T* v, const T* qkv, const AttentionShape& s);
// dq, dk, dv -> dqkv (B*S, qkv_width) (overwritten).
template <typename T>
void split_heads_backward(T* dqkv, const T* dq, const T* dk, const T* dv, const AttentionShape& s);
// o (B, H, S, D) -> y (B*S, H*D).
template <typename T>
void merge_heads_forward(T* y, const T* o, const AttentionShape& s);
// dy (B*S, H*D) -> do (B, H, S, D) (overwritten).
template <typename T>
void merge_heads_backward(T* d_o, const T* dy, const AttentionShape& s);

// o = softmax(q k^T / sqrt(D), causal) v. `probs` (B, H, S, S) receives the attention
// probabilities when not null (recompute none); with null they are not kept (selective
// recompute rebuilds them in the backward).
template <typename T>
void attention_forward(T* o, T* probs, const T* q, const T* k, const T* v, const AttentionShape& s);

// Backward: dq, dk, dv are overwritten. `probs` from the forward, or null to recompute
// them from q and k (bitwise the same values as the forward produced).
template <typename T>
void attention_backward(T* dq, T* dk, T* dv, const T* d_o, const T* probs, const T* q, const T* k,
                        const T* v, const AttentionShape& s);

}  // namespace strata::runtime
