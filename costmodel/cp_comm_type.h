// How context-parallel ranks exchange K/V: a ring of send/recv overlapped with the
// attention (Megatron-Core's default "p2p") or an all-gather before it (Llama 3's
// choice, Megatron's "allgather"). Costs: costmodel/context_parallel_cost.h.
#pragma once
#include <string>

namespace strata::costmodel {

enum class CpCommType { P2p, AllGather };
const char* to_string(CpCommType c);  // "p2p" | "all_gather"
// "p2p", "all_gather" (or Megatron's spelling "allgather"); InputError otherwise.
CpCommType cp_comm_type_from_string(const std::string& s);

}  // namespace strata::costmodel
