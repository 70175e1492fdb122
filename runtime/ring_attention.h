// Ring attention for context parallel (Liu et al. 2023; Megatron-Core's CP with load-
// balanced causal chunks, see runtime/context_parallel.h): each CP rank keeps its own
// K/V and passes them around the CP ring, cp - 1 shifts in the forward; the attention of
// the local queries against each visiting block is merged with an online softmax (running
// max and sum per query row, as FlashAttention). The backward recomputes each block's
// probabilities from the kept log-sum-exp and sends the blocks around again, their dK/dV
// accumulating as they travel: after cp shifts every block is back with the sum of all
// ranks' contributions. Causality by position: query i sees key j iff pos(j) <= pos(i).
// Layouts as runtime/attention.h with seq = the local tokens (full_seq / cp).
#pragma once
#include <cstddef>

#include "runtime/attention.h"
#include "runtime/context_parallel.h"

namespace strata::runtime {

// o (B, H, Sl, D) and lse (B, H, Sl), the log-sum-exp of each query row's scaled scores.
// Collective over the CP group (send/recv around the ring).
void ring_attention_forward(const CpGroup& cp, std::size_t full_seq, const AttentionShape& s,
                            const float* q, const float* k, const float* v, float* o, float* lse);

// dq (B, H, Sl, D), dk, dv (B, KV, Sl, D) of this rank's tokens (overwritten), summed over
// every rank's queries. Collective.
void ring_attention_backward(const CpGroup& cp, std::size_t full_seq, const AttentionShape& s,
                             const float* q, const float* k, const float* v, const float* o,
                             const float* lse, const float* d_o, float* dq, float* dk, float* dv);

}  // namespace strata::runtime
