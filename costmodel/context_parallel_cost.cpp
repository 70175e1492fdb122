#include "costmodel/context_parallel_cost.h"

#include <algorithm>

#include "common/enum_names.h"
#include "common/errors.h"

namespace strata::costmodel {

constexpr EnumName<CpCommType> kCpCommNames[] = {{CpCommType::P2p, "p2p"}, {CpCommType::AllGather, "all_gather"}};

const char* to_string(CpCommType c) { return enum_name(c, kCpCommNames); }

CpCommType cp_comm_type_from_string(const std::string& s) {
  if (const auto c = enum_from_name(s == "allgather" ? std::string("all_gather") : s, kCpCommNames)) return *c;
  input_error("context-parallel communication '{}' is not one of: {}", s, enum_names(kCpCommNames));
}

double cp_kv_bytes_per_rank(double micro_batch, double seq_len, double kv_dim, int tp, int cp,
                            double dtype_bytes) {
  if (tp < 1 || cp < 1) input_error("tp ({}) and cp ({}) must be >= 1", tp, cp);
  return 2.0 * micro_batch * (seq_len / cp) * (kv_dim / tp) * dtype_bytes;
}

CpAttentionComm cp_attention_comm(CpCommType type, int cp, double kv_bytes_per_rank,
                                  double attention_fwd_s, double attention_bwd_s,
                                  const CollectiveCost& coll, const PlacedGroup& cp_group) {
  CpAttentionComm r;
  if (cp <= 1) return r;
  const double hops = cp - 1;
  if (type == CpCommType::P2p) {
    // One ring hop sits on the CP group's placement: across nodes when the group spans them.
    PlacedGroup pair{2, cp_group.nodes_spanned > 1 ? 2 : 1, cp_group.nodes_spanned > 1 ? 1 : 2};
    const double hop_fwd = coll.time_s(Collective::SendRecv, kv_bytes_per_rank, pair);
    const double hop_bwd = coll.time_s(Collective::SendRecv, 2.0 * kv_bytes_per_rank, pair);
    r.fwd_comm_s = hops * hop_fwd;
    r.bwd_comm_s = hops * hop_bwd;
    r.fwd_exposed_s = hops * std::max(0.0, hop_fwd - attention_fwd_s / cp);
    r.bwd_exposed_s = hops * std::max(0.0, hop_bwd - attention_bwd_s / cp);
  } else {
    const double gathered = cp * kv_bytes_per_rank;
    r.fwd_comm_s = coll.time_s(Collective::AllGather, gathered, cp_group);
    r.bwd_comm_s = coll.time_s(Collective::AllGather, gathered, cp_group) +
                   coll.time_s(Collective::ReduceScatter, gathered, cp_group);
    r.fwd_exposed_s = r.fwd_comm_s;
    r.bwd_exposed_s = r.bwd_comm_s;
  }
  return r;
}

}  // namespace strata::costmodel
