// Context parallel attention: the K/V exchange of a sequence split over cp ranks and the
// part of it the attention compute does not hide.
//
// Layout (Megatron-Core with Transformer Engine): each sequence is cut into 2*cp chunks
// and rank r keeps chunks r and 2*cp-1-r, so under the causal mask every rank does the
// same attention work: 1/cp of the whole sequence's causal attention. Every op other than
// the attention core works on the rank's s/cp tokens unchanged (Megatron-LM
// docs/source/api-guide/context_parallel.rst, commit 1df56dcbb858728d89292f0dae5ef4d035a95e97).
//
// K/V bytes per rank and layer, one micro-batch: kv_local = 2 (K and V) * b * (s/cp) *
// kv_dim / tp * dtype bytes (the rank's own chunks, its TP shard of the K/V heads; GQA
// sends only the kv heads, unless the stack repeats them before the attention kernel:
// TorchTitan's repeat_kv, attention.layout_copies, sends every query head).
//
// Two exchanges (Megatron-LM --cp-comm-type, default "p2p": megatron/training/arguments.py,
// commit 307dcf37f03d44da131ba21999278abe4112d2ad; Transformer Engine
// transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py, commit
// 9c61cd7e5e0c93217ad38d4682568ff5dde4f08b):
//  * P2p (ring): cp steps of attention, each on the K/V block received in the previous
//    step; while step i computes, the block for step i+1 travels one ring hop (send/recv
//    of kv_local). Forward: cp-1 hops, each hidden behind one step's compute
//    (attention_fwd / cp): exposed = (cp-1) * max(0, hop - attention_fwd / cp).
//    Backward: the K/V blocks travel again and their gradients dK/dV travel with them
//    (2 * kv_local per hop): exposed = (cp-1) * max(0, hop2 - attention_bwd / cp).
//  * AllGather (Llama 3's choice; Megatron "allgather"): the forward all-gathers K/V
//    (gathered buffer cp * kv_local) before the attention; only the local chunks are kept
//    for the backward, which all-gathers K/V again and reduce-scatters dK/dV (gathered
//    buffer cp * kv_local each). Not overlapped: all of it is exposed.
// Collective times come from CollectiveCost on the placed CP group (NVLink inside a node,
// the network across nodes); a ring hop is a send/recv on that group's placement.
#pragma once
#include <string>

#include "costmodel/collective_cost.h"
#include "costmodel/cp_comm_type.h"

namespace strata::costmodel {

// Bytes of K and V one rank holds for one layer and micro-batch (see above).
double cp_kv_bytes_per_rank(double micro_batch, double seq_len, double kv_dim, int tp, int cp,
                            double dtype_bytes);

struct CpAttentionComm {
  double fwd_comm_s = 0, bwd_comm_s = 0;        // all K/V traffic time, one layer, one micro-batch
  double fwd_exposed_s = 0, bwd_exposed_s = 0;  // the part the attention compute leaves exposed
};

// The K/V exchange of one layer and micro-batch. attention_fwd_s / attention_bwd_s: the
// rank's whole attention-core time (all cp steps). cp == 1: all zero.
CpAttentionComm cp_attention_comm(CpCommType type, int cp, double kv_bytes_per_rank,
                                  double attention_fwd_s, double attention_bwd_s,
                                  const CollectiveCost& coll, const PlacedGroup& cp_group);

}  // namespace strata::costmodel
