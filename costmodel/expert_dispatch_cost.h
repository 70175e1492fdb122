// ExpertDispatchCost: what the routed experts of one MoE layer cost one rank under expert
// parallelism (Megatron-Core's all-to-all token dispatcher with parallel folding).
//
// Layout (ExpertLayout): the tp x cp x dp ranks of a pipeline stage hold the experts as
// etp x ep x edp, etp innermost (planner/detail/expert_parallel.h). A rank starts the MoE layer
// with its own tokens, t_r = b*s / (cp*tp) (Megatron requires sequence parallelism with
// tp > 1 for MoE; the caller passes the cp-local graph, whose s is already s/cp), each routed to top_k experts:
//   dispatch: permute the t_r*top_k token copies by expert, all-to-all over the ep group
//             (send buffer t_r*top_k*h*2 bytes: nccl-tests' all-to-all size), then with
//             etp > 1 all-gather over the etp group (every etp shard needs all tokens of
//             its experts: gathered size etp x the all-to-all buffer);
//   experts:  experts/ep local experts, each a GEMM over m = t_r*top_k*ep*etp/experts
//             tokens (the mean), width expert_ffn/etp: a grouped GEMM timed per expert
//             from the GEMM curve at that small per-expert shape (GemmCost), times the
//             count, so small experts pay the lower efficiency of small GEMMs;
//   combine:  the reverse (reduce-scatter over etp, all-to-all over ep, unpermute).
// The backward runs the same exchanges in the other direction. Load imbalance: with
// dropless routing the busiest rank gets `load_imbalance` x the mean tokens (model
// parameter moe.load_imbalance, default 1.0); with a capacity factor every expert is
// padded to cf x the mean. That factor scales the per-expert m and the all-to-all bytes.
#pragma once
#include <cstdint>
#include <vector>

#include "costmodel/collective_cost.h"
#include "costmodel/gemm_cost.h"
#include "costmodel/op_cost.h"
#include "costmodel/rank_grid.h"
#include "models/moe_spec.h"
#include "models/op.h"

namespace strata::costmodel {

struct ExpertLayout {
  int tp = 1;                  // attention tensor parallel degree
  bool sequence_parallel = false;
  int ep = 1, etp = 1;
  double tokens_factor = 1.0;  // busiest rank's tokens / mean (imbalance or capacity factor)
  // Placement and dispatcher, for the bytes that cross nodes (DispatchBytes::inter_node): the
  // nodes the ep group spans, and whether the dispatcher sends a token once per destination
  // node and forwards it inside the node (DeepSeek-V3's kernels, DeepEP's internode mode)
  // instead of once per routed copy (Megatron-Core's alltoall dispatcher, the default).
  int ep_nodes = 1;
  bool once_per_node = false;
  // Megatron-Core's allgather dispatcher: every token of the etp x ep group (`tp_ep`, its
  // placement) all-gathered to each of its ranks with the routing, the experts' outputs
  // reduce-scattered back; no all-to-all and no etp gather beside it.
  bool all_gather = false;
  PlacedGroup tp_ep;
};

// Where one token's top_k routed copies go, in expectation under balanced routing (every
// allowed expert equally likely; the target of the balancing loss or bias), with the ep
// group over `ep_nodes` nodes and the experts placed contiguously by ep rank (node j holds
// experts j*E/N .. (j+1)*E/N - 1, Megatron-Core's layout). Group-limited routing
// (MoeSpec::groups, max_groups_per_token: M of G groups) first picks M groups, then top_k of
// their experts. With G = N (Megatron's advice for node-limited routing, DeepSeek-V3's 8
// groups on 8 nodes) a token reaches at most M nodes.
//   nodes_reached     expected distinct nodes its copies land on (its own included):
//                     the sum over the N nodes of P(the node gets >= 1 copy); without a limit
//                     N (1 - C(E - E/N, k) / C(E, k)); with a limit, M of G groups chosen
//                     and k experts among their M E/G, the node's share c of the chosen
//                     groups' experts counted exactly from how its E/N experts overlap the
//                     groups: P = 1 - sum_c P(c) C(M E/G - c, k) / C(M E/G, k). (G/N whole
//                     groups per node makes c hypergeometric; a group over N/G nodes gives
//                     P = (M/G) (1 - C(M E/G - E/N, k) / C(M E/G, k)); groups straddling
//                     nodes unevenly give each node its own P.)
//   copies_off_node   copies sent to other nodes by a per-copy all-to-all: k (N-1)/N. Each
//                     expert is equally likely either way, so the group limit does not change
//                     it: a per-copy dispatcher gains nothing from node-limited routing.
//   sends_off_node    sends to other nodes by a once-per-node dispatcher: nodes_reached
//                     x (N-1)/N (a token starts on any node alike), at most
//                     min(k, M nodes) - what the limit bounds.
// Router cost is unchanged by the limit or by sigmoid scores with bias balancing (the bias
// only shifts the top-k choice; the router GEMM h x E is the same and is < 0.1% of an MoE
// layer's FLOPs for DeepSeek-V3), so neither is charged anything.
// InputError when N does not divide E.
struct TokenRouting {
  double nodes_reached = 0;
  double copies_off_node = 0;
  double sends_off_node = 0;
};
TokenRouting token_routing(const models::MoeSpec& moe, int ep_nodes);
// tokens_factor for a model: capacity factor when set, else the load imbalance.
double expert_tokens_factor(const models::MoeSpec& moe);

// One routed-expert GEMM on one rank: `count` GEMMs of (m, n, k).
struct ExpertGemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t count = 0;
  bool operator==(const ExpertGemmShape&) const = default;
};
// For an Op with routed_expert set. InputError when ep does not divide the op's experts or
// etp its sharded dimension.
ExpertGemmShape expert_gemm_shape(const models::Op& op, const ExpertLayout& layout);
// Forward (one GEMM per local expert) and backward (dgrad + wgrad each) time.
OpTime expert_gemm_time(const GemmCost& gemm, const models::Op& op, const ExpertLayout& layout, DType dtype);

// Bytes of one exchange (dispatch or combine) for an Op with ep_comm set, per rank:
// all_to_all = the send buffer over the ep group (0 when ep == 1); etp_gather = the
// gathered buffer over the etp group (0 when etp == 1); permute = memory traffic of
// permuting (or un-permuting) the token copies (read + write); inter_node = the part of the
// exchange that crosses nodes (token_routing: all_to_all x (N-1)/N per copy, or the
// once-per-node sends; 0 inside one node).
struct DispatchBytes {
  double all_to_all = 0, etp_gather = 0, permute = 0, inter_node = 0;
  // The allgather dispatcher (layout.all_gather): the gathered buffer of the etp x ep
  // group's tokens (h wide, each token once, whatever its top_k) and, gathered with them,
  // its routing: the probabilities (act_bytes) and the routing map (1 byte) per expert.
  double token_gather = 0, routing_gather = 0;
};
// act_bytes: bytes per activation element (2 for bf16/fp16; the op's numbers assume 2).
// `moe` gives the routing for inter_node, needed when layout.ep_nodes > 1.
DispatchBytes dispatch_bytes(const models::Op& op, const ExpertLayout& layout, double act_bytes = 2.0,
                             const models::MoeSpec* moe = nullptr);

struct DispatchTime {
  double fwd_s = 0, bwd_s = 0;  // collectives only (permutes are compute, see permute_bytes)
  double permute_bytes = 0;     // DispatchBytes::permute of the same exchange, each way
};
// The exchange of `op` (dispatch before expert_up, combine after expert_down), forward and
// backward: all-to-all on `ep_group`, all-gather / reduce-scatter on `etp_group`. With the
// allgather dispatcher (layout.all_gather) the dispatch all-gathers the tokens and their
// routing over layout.tp_ep and the combine reduce-scatters the outputs there; each one's
// backward is the other collective on the gradients (MoEAllGatherTokenDispatcher,
// megatron/core/transformer/moe/token_dispatcher.py at d98e8a64: token_dispatch gathers the
// routing map, the probabilities and the hidden states over tp_ep_group; token_combine
// reduce-scatters over it). With a
// once-per-node dispatcher (layout.once_per_node, `moe` given) over an ep group that spans
// nodes, the all-to-all is two legs that DeepEP's normal kernels run together: a token goes
// once over RDMA to each node it needs, to the GPU of its own index there, which forwards it
// over NVLink to the GPUs holding its experts ("asymmetric-domain bandwidth forwarding",
// deepseek-ai/DeepEP docs/legacy.md, the V1 kernels Megatron-Core's flex dispatcher calls;
// README at 0297fc80). Timed as each rank's sends to other nodes
// (DispatchBytes::inter_node) in an all-to-all of one rank per node, and the forwarding
// inside each node in an all-to-all of its ranks; the slower leg sets the time (the kernels
// stream chunks through both at once).
DispatchTime dispatch_time(const CollectiveCost& coll, const models::Op& op, const ExpertLayout& layout,
                           const PlacedGroup& ep_group, const PlacedGroup& etp_group, double act_bytes = 2.0,
                           const models::MoeSpec* moe = nullptr);

// Megatron-Core parallel folding (NVIDIA/Megatron-LM megatron/core/parallel_state.py at
// d98e8a64ddf34856e74b24714e3bedb2f5a39553, initialize_model_parallel): attention's
// RankGenerator spans tp x cp x dp x pp, the experts' a second one over etp x ep x edp x pp
// (cp = 1 there) with the same order string "tp-cp-ep-dp-pp", on the same ranks. So within
// a pipeline stage the attention index tp_i + tp * (cp_i + cp * dp_i) is read as
// etp_i + etp * (ep_i + ep * edp_i), edp = tp * cp * dp / (ep * etp): an ep group can mix
// cp and dp ranks, and the two kinds of groups sit differently on the nodes.
// True when the grid orders a stage's ranks as Megatron-Core does (tp, then cp, then dp,
// pipeline outermost; axes of size 1 may sit anywhere).
bool expert_folding_order(const RankGrid& grid);
// The ranks of the expert group along `axis` that contains `rank`. InputError when the grid
// is not in the folding order or ep x etp does not divide tp x cp x dp.
// EtpEp: the etp x ep ranks the allgather dispatcher gathers over (Megatron-Core's tp_ep group).
enum class ExpertAxis { Etp, Ep, Edp, EtpEp };
std::vector<int> expert_group_ranks(const RankGrid& grid, int ep, int etp, ExpertAxis axis, int rank);
// The worst-placed such group (most nodes spanned, then fewest ranks per node).
PlacedGroup placed_expert_group(const RankGrid& grid, int ep, int etp, ExpertAxis axis, int gpus_per_node);

}  // namespace strata::costmodel
