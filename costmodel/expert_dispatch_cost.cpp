#include "costmodel/expert_dispatch_cost.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/errors.h"

namespace strata::costmodel {
namespace {

// Tokens of one micro-batch a rank holds when the MoE layer starts, as a fraction of
// the op's (unsharded) tokens: 1/tp with sequence parallelism.
double token_share(const ExpertLayout& l) { return l.tp > 1 ? 1.0 / l.tp : 1.0; }

void check(const ExpertLayout& l) {
  if (l.tp < 1 || l.ep < 1 || l.etp < 1)
    input_error("expert layout tp ({}), ep ({}), etp ({}) must be >= 1", l.tp, l.ep, l.etp);
  if (!(l.tokens_factor >= 1.0) || !std::isfinite(l.tokens_factor))
    input_error("expert tokens factor ({}) must be >= 1", l.tokens_factor);
}

// C(a, k) / C(b, k) for a <= b: the chance that k draws without replacement from b items
// all miss the b - a others.
double choose_ratio(double a, double b, std::int64_t k) {
  double r = 1;
  for (std::int64_t i = 0; i < k; ++i) {
    if (a - static_cast<double>(i) <= 0) return 0;
    r *= (a - static_cast<double>(i)) / (b - static_cast<double>(i));
  }
  return r;
}

// P(node `n` of N gets >= 1 of a token's k copies) under group-limited routing: M of the G
// groups chosen uniformly, then k of their M E/G experts. The node holds experts
// [n E/N, (n+1) E/N), group g holds [g E/G, (g+1) E/G); the node's candidates c are its
// overlap with the chosen groups, whose distribution a count over the groups gives
// (ways[j][c]: subsets of j groups seen so far with c of the node's experts among them).
double group_limited_hit(std::int64_t E, std::int64_t k, std::int64_t G, std::int64_t M, std::int64_t N,
                         std::int64_t n) {
  const std::int64_t per_node = E / N, per_group = E / G, lo = n * per_node, hi = lo + per_node;
  std::vector<std::vector<double>> ways(static_cast<std::size_t>(M + 1),
                                        std::vector<double>(static_cast<std::size_t>(per_node + 1), 0.0));
  ways[0][0] = 1;
  for (std::int64_t g = 0; g < G; ++g) {
    const std::int64_t o = std::max<std::int64_t>(0, std::min(hi, (g + 1) * per_group) - std::max(lo, g * per_group));
    for (std::int64_t j = std::min(g + 1, M); j >= 1; --j)
      for (std::int64_t c = per_node; c >= o; --c)
        ways[static_cast<std::size_t>(j)][static_cast<std::size_t>(c)] +=
            ways[static_cast<std::size_t>(j - 1)][static_cast<std::size_t>(c - o)];
  }
  const double candidates = static_cast<double>(M * per_group);
  double total = 0, miss = 0;
  for (std::int64_t c = 0; c <= per_node; ++c) {
    const double w = ways[static_cast<std::size_t>(M)][static_cast<std::size_t>(c)];
    total += w;
    miss += w * choose_ratio(candidates - static_cast<double>(c), candidates, k);
  }
  return 1 - miss / total;
}

}  // namespace

TokenRouting token_routing(const models::MoeSpec& moe, int ep_nodes) {
  const std::int64_t E = moe.experts, k = moe.top_k, N = ep_nodes;
  if (N < 1 || E < 1 || E % N != 0)
    input_error("the expert-parallel group's nodes ({}) must divide the experts ({})", N, E);
  const double per_node = static_cast<double>(E / N);
  // Tokens start on every node alike, so a token's own node is any of the N: the expected
  // nodes it reaches is the sum of every node's chance, and (N - 1)/N of that is off its node.
  double hits = 0;
  if (!moe.group_limited()) {
    hits = static_cast<double>(N) * (1 - choose_ratio(static_cast<double>(E) - per_node, static_cast<double>(E), k));
  } else {
    if (moe.groups < 1 || E % moe.groups != 0 || moe.max_groups_per_token < 1 || moe.max_groups_per_token > moe.groups)
      input_error("group-limited routing: groups ({}) must divide the experts ({}) and max_groups_per_token ({}) "
                  "be 1..groups", moe.groups, E, moe.max_groups_per_token);
    const std::int64_t G = moe.groups, M = moe.max_groups_per_token;
    // Where groups and nodes nest (one divides the other) every node overlaps the groups alike.
    if (G % N == 0 || N % G == 0) hits = static_cast<double>(N) * group_limited_hit(E, k, G, M, N, 0);
    else
      for (std::int64_t n = 0; n < N; ++n) hits += group_limited_hit(E, k, G, M, N, n);
  }
  TokenRouting r;
  r.nodes_reached = hits;
  r.copies_off_node = static_cast<double>(k) * static_cast<double>(N - 1) / static_cast<double>(N);
  r.sends_off_node = hits * static_cast<double>(N - 1) / static_cast<double>(N);
  return r;
}

double expert_tokens_factor(const models::MoeSpec& moe) {
  return moe.capacity_factor > 0 ? moe.capacity_factor : moe.load_imbalance;
}

ExpertGemmShape expert_gemm_shape(const models::Op& op, const ExpertLayout& l) {
  check(l);
  STRATA_CHECK(op.routed_expert, "expert_gemm_shape on a non-expert op '{}'", op.name);
  if (op.gemm_count % l.ep != 0)
    input_error("strategy.ep ({}) must divide the experts ({}) of {}", l.ep, op.gemm_count, op.name);
  ExpertGemmShape s;
  s.count = op.gemm_count / l.ep;
  s.n = op.gemm.n;
  s.k = op.gemm.k;
  // Column-parallel (up, gate) split n over etp, row-parallel (down) k.
  std::int64_t& split = op.sharding == models::Sharding::RowParallel ? s.k : s.n;
  if (split % l.etp != 0)
    input_error("strategy.etp ({}) must divide the expert width ({}) of {}", l.etp, split, op.name);
  split /= l.etp;
  // Routed token copies of the whole micro-batch (exact, from the FLOPs), then the rank's
  // share: its own tokens' copies, gathered over ep and etp, spread over its experts.
  const double copies = op.flops_fwd / (2.0 * static_cast<double>(op.gemm.n) * static_cast<double>(op.gemm.k));
  const double per_expert = copies * token_share(l) * l.ep * l.etp / static_cast<double>(op.gemm_count);
  s.m = static_cast<std::int64_t>(std::ceil(per_expert * l.tokens_factor - 1e-9));
  if (s.m < 1) s.m = 1;
  return s;
}

OpTime expert_gemm_time(const GemmCost& gemm, const models::Op& op, const ExpertLayout& l, DType dtype) {
  const ExpertGemmShape s = expert_gemm_shape(op, l);
  const GemmEstimate fwd = gemm.estimate(s.m, s.n, s.k, dtype, Accumulation::Fast);  // as OpCost's linears
  const GemmEstimate dgrad = gemm.estimate(s.m, s.k, s.n, dtype);
  const GemmEstimate wgrad = gemm.estimate(s.k, s.n, s.m, dtype);
  OpTime t;
  const double c = static_cast<double>(s.count);
  t.fwd_s = c * fwd.time_s;
  t.bwd_s = c * (dgrad.time_s + wgrad.time_s);
  t.source = worse(fwd.source, worse(dgrad.source, wgrad.source));
  return t;
}

DispatchBytes dispatch_bytes(const models::Op& op, const ExpertLayout& l, double act_bytes,
                             const models::MoeSpec* moe) {
  check(l);
  DispatchBytes b;
  if (op.ep_comm == models::EpComm::None) return b;
  // ep_comm_bytes: the micro-batch's token copies x hidden x 2 bytes, unsharded.
  const double send = op.ep_comm_bytes * act_bytes / 2.0 * token_share(l) * l.tokens_factor;
  b.permute = 2.0 * op.ep_comm_bytes * act_bytes / 2.0 * token_share(l);  // read + write once
  if (l.all_gather) {
    STRATA_CHECK(moe != nullptr, "the allgather dispatcher's bytes need the model's routing");
    const double group = static_cast<double>(l.ep) * l.etp;
    if (group > 1) {
      // The rank's tokens, each once (ep_comm_bytes counts top_k copies), gathered from the group.
      const double tokens_bytes = op.ep_comm_bytes * act_bytes / 2.0 * token_share(l) / static_cast<double>(moe->top_k);
      const double hidden = static_cast<double>(op.ep_comm == models::EpComm::DispatchForwardCombineBackward ? op.gemm.k
                                                                                                          : op.gemm.n);
      const double tokens = tokens_bytes / (hidden * act_bytes);
      b.token_gather = tokens_bytes * group;
      b.routing_gather = tokens * static_cast<double>(moe->experts) * (act_bytes + 1.0) * group;
    }
    return b;
  }
  b.all_to_all = l.ep > 1 ? send : 0.0;
  if (l.ep > 1 && l.ep_nodes > 1) {
    STRATA_CHECK(moe != nullptr, "dispatch_bytes over {} nodes needs the model's routing", l.ep_nodes);
    const models::MoeSpec& routing = *moe;
    const TokenRouting r = token_routing(routing, l.ep_nodes);
    b.inter_node = send * (l.once_per_node ? r.sends_off_node : r.copies_off_node) /
                   static_cast<double>(routing.top_k);
  }
  b.etp_gather = l.etp > 1 ? send * l.etp : 0.0;
  return b;
}

DispatchTime dispatch_time(const CollectiveCost& coll, const models::Op& op, const ExpertLayout& l,
                           const PlacedGroup& ep_group, const PlacedGroup& etp_group, double act_bytes,
                           const models::MoeSpec* moe) {
  const DispatchBytes b = dispatch_bytes(op, l, act_bytes, moe);
  if (l.all_gather) {
    DispatchTime t;
    t.permute_bytes = b.permute;
    if (b.token_gather <= 0) return t;
    // The routing travels with the forward's gather only; the backward's gathers carry gradients.
    const double gather_fwd = coll.time_s(Collective::AllGather, b.token_gather + b.routing_gather, l.tp_ep);
    const double gather_bwd = coll.time_s(Collective::AllGather, b.token_gather, l.tp_ep);
    const double scatter = coll.time_s(Collective::ReduceScatter, b.token_gather, l.tp_ep);
    switch (op.ep_comm) {
      case models::EpComm::DispatchForwardCombineBackward: t.fwd_s = gather_fwd, t.bwd_s = scatter; break;
      case models::EpComm::CombineForwardDispatchBackward: t.fwd_s = scatter, t.bwd_s = gather_bwd; break;
      case models::EpComm::None: break;
    }
    return t;
  }
  double a2a = 0;
  const int nodes = ep_group.nodes_spanned, per_node = ep_group.ranks_per_node_in_group;
  if (l.once_per_node && nodes > 1 && b.inter_node > 0) {
    // An all-to-all of n ranks moves (n - 1) / n of its buffer: scale so the one-rank-per-
    // node leg moves exactly the inter-node bytes.
    const double rdma = coll.time_s(Collective::AllToAll, b.inter_node * nodes / (nodes - 1.0),
                                    PlacedGroup{nodes, nodes, 1});
    const double nvlink =
        per_node > 1 ? coll.time_s(Collective::AllToAll, b.all_to_all, PlacedGroup{per_node, 1, per_node}) : 0.0;
    a2a = std::max(rdma, nvlink);
  } else if (b.all_to_all > 0) {
    a2a = coll.time_s(Collective::AllToAll, b.all_to_all, ep_group);
  }
  const double ag = b.etp_gather > 0 ? coll.time_s(Collective::AllGather, b.etp_gather, etp_group) : 0.0;
  const double rs = b.etp_gather > 0 ? coll.time_s(Collective::ReduceScatter, b.etp_gather, etp_group) : 0.0;
  DispatchTime t;
  t.permute_bytes = b.permute;
  switch (op.ep_comm) {
    case models::EpComm::DispatchForwardCombineBackward:
      t.fwd_s = a2a + ag;  // forward: all-to-all out, all-gather over etp
      t.bwd_s = rs + a2a;  // backward: the gradients come back the reverse way
      break;
    case models::EpComm::CombineForwardDispatchBackward:
      t.fwd_s = rs + a2a;
      t.bwd_s = a2a + ag;
      break;
    case models::EpComm::None: break;
  }
  return t;
}

bool expert_folding_order(const RankGrid& g) {
  // Axes of size 1 take no place: only the strides of the others matter.
  return (g.tp() == 1 || g.stride(Axis::Tp) == 1) && (g.cp() == 1 || g.stride(Axis::Cp) == g.tp()) &&
         (g.dp() == 1 || g.stride(Axis::Dp) == g.tp() * g.cp()) && g.pipeline_outermost();
}

std::vector<int> expert_group_ranks(const RankGrid& grid, int ep, int etp, ExpertAxis axis, int rank) {
  if (!expert_folding_order(grid))
    input_error("expert parallelism needs rank order tp-cp-dp-pp (tp-dp-pp; got {})", grid.order());
  const int stage_ranks = grid.stage_size();
  if (ep < 1 || etp < 1 || stage_ranks % (ep * etp) != 0)
    input_error("ep ({}) x etp ({}) must divide tp x cp x dp ({})", ep, etp, stage_ranks);
  if (rank < 0 || rank >= grid.world_size())
    input_error("rank ({}) must be in 0 .. {}", rank, grid.world_size() - 1);
  const int edp = stage_ranks / (ep * etp);
  const int base = rank / stage_ranks * stage_ranks, local = rank % stage_ranks;
  const int e_tp = local % etp, e_ep = local / etp % ep, e_dp = local / (etp * ep);
  std::vector<int> out;
  auto at = [&](int t, int e, int d) { return base + t + etp * (e + ep * d); };
  switch (axis) {
    case ExpertAxis::Etp: for (int i = 0; i < etp; ++i) out.push_back(at(i, e_ep, e_dp)); break;
    case ExpertAxis::Ep: for (int i = 0; i < ep; ++i) out.push_back(at(e_tp, i, e_dp)); break;
    case ExpertAxis::Edp: for (int i = 0; i < edp; ++i) out.push_back(at(e_tp, e_ep, i)); break;
    case ExpertAxis::EtpEp:
      for (int j = 0; j < ep; ++j)
        for (int i = 0; i < etp; ++i) out.push_back(at(i, j, e_dp));
      break;
  }
  return out;
}

PlacedGroup placed_expert_group(const RankGrid& grid, int ep, int etp, ExpertAxis axis, int gpus_per_node) {
  if (gpus_per_node < 1) input_error("gpus_per_node ({}) must be >= 1", gpus_per_node);
  (void)expert_group_ranks(grid, ep, etp, axis, 0);  // the same input checks
  // Stage p holds ranks p * S .. p * S + S - 1 (S = tp x cp x dp, tp-cp-dp-pp order) as
  // etp x ep x edp, etp innermost, so the groups along an axis are strided runs that
  // tile the world: etp: etp ranks 1 apart; ep: ep ranks etp apart; edp: edp ranks
  // etp * ep apart (one stage's S ranks per tiling period).
  const long long stage_ranks = grid.stage_size();
  const long long n = axis == ExpertAxis::Etp     ? etp
                      : axis == ExpertAxis::Ep    ? ep
                      : axis == ExpertAxis::EtpEp ? static_cast<long long>(etp) * ep
                                                  : stage_ranks / (ep * etp);
  const long long stride = axis == ExpertAxis::Etp || axis == ExpertAxis::EtpEp ? 1
                           : axis == ExpertAxis::Ep                             ? etp
                                                                                : static_cast<long long>(etp) * ep;
  return placed_strided_groups(n, stride, grid.world_size(), gpus_per_node);
}

}  // namespace strata::costmodel
