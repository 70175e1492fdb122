#include "costmodel/collective_cost.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "common/errors.h"

namespace strata::costmodel {

PlacedGroup placed_ranks(const std::vector<int>& ranks, int gpus_per_node) {
  if (gpus_per_node < 1) input_error("gpus_per_node ({}) must be >= 1", gpus_per_node);
  if (ranks.empty()) input_error("a placed group needs at least one rank");
  // The nodes in order, counted run by run (the planner places thousands of groups, some
  // of every rank: no map per call).
  std::vector<int> nodes;
  nodes.reserve(ranks.size());
  for (int r : ranks) {
    if (r < 0) input_error("rank {} must be >= 0", r);
    nodes.push_back(r / gpus_per_node);
  }
  if (!std::is_sorted(nodes.begin(), nodes.end())) std::sort(nodes.begin(), nodes.end());
  PlacedGroup g;
  g.size = static_cast<int>(ranks.size());
  g.nodes_spanned = 0;
  g.ranks_per_node_in_group = 0;
  for (std::size_t b = 0; b < nodes.size();) {
    std::size_t e = b + 1;
    while (e < nodes.size() && nodes[e] == nodes[b]) ++e;
    ++g.nodes_spanned;
    g.ranks_per_node_in_group = std::max(g.ranks_per_node_in_group, static_cast<int>(e - b));
    b = e;
  }
  return g;
}

namespace {

// Worse placement: more nodes, then fewer ranks on the busiest node.
bool worse_than(const PlacedGroup& a, const PlacedGroup& b) {
  if (a.nodes_spanned != b.nodes_spanned) return a.nodes_spanned > b.nodes_spanned;
  return a.ranks_per_node_in_group < b.ranks_per_node_in_group;
}

}  // namespace

namespace {

long long ceil_div_nonneg(long long a, long long b) { return a <= 0 ? 0 : (a + b - 1) / b; }

// Placement of the ranks {b + i*s : 0 <= i < n} on nodes of `node` ranks, without listing
// them: a DP group of 1e9 ranks is placed in O(s) steps instead of O(n).
PlacedGroup placed_progression(long long b, long long s, long long n, long long node) {
  PlacedGroup g;
  g.size = static_cast<int>(n);
  if (s >= node) {  // consecutive members always land on different nodes
    g.nodes_spanned = static_cast<int>(n);
    g.ranks_per_node_in_group = 1;
    return g;
  }
  const long long first = b / node, last = (b + (n - 1) * s) / node;
  g.nodes_spanned = static_cast<int>(last - first + 1);  // gaps < node: no node skipped
  auto count_on = [&](long long k) {
    long long lo = ceil_div_nonneg(k * node - b, s);
    long long hi = std::min(n, ceil_div_nonneg((k + 1) * node - b, s));
    return hi > lo ? hi - lo : 0;
  };
  // Interior node counts repeat with a period of at most s nodes; both ends are partial.
  long long best = count_on(last);
  for (long long k = first; k <= last && k <= first + s + 1; ++k) best = std::max(best, count_on(k));
  g.ranks_per_node_in_group = static_cast<int>(best);
  return g;
}

}  // namespace

PlacedGroup placed_group(const RankGrid& grid, Axis axis, int gpus_per_node) {
  return placed_strided_groups(grid.size(axis), grid.stride(axis), grid.world_size(), gpus_per_node);
}

PlacedGroup placed_strided_groups(long long n, long long s, long long world, int gpus_per_node) {
  if (gpus_per_node < 1) input_error("gpus_per_node ({}) must be >= 1", gpus_per_node);
  if (n < 1 || s < 1 || world < 1 || world % (s * n) != 0)
    input_error("strided groups of {} ranks {} apart do not tile {} ranks", n, s, world);
  // Groups are {b, b + s, ..., b + (n-1)s} for bases b = q*s*n + r (0 <= r < s). The
  // placement of a group depends only on b mod gpus_per_node, and shifting b by
  // lcm(gpus_per_node, s*n) maps bases to bases with the same residue, so bases
  // below that period (or the world size) cover every shape.
  const long long period = std::lcm(static_cast<long long>(gpus_per_node), s * n);
  const long long limit = std::min<long long>(world, period);
  PlacedGroup worst;
  bool first = true;
  for (long long q = 0; q * s * n < limit; ++q)
    for (long long r = 0; r < s && q * s * n + r < limit; ++r) {
      PlacedGroup p = placed_progression(q * s * n + r, s, n, gpus_per_node);
      if (first || worse_than(p, worst)) worst = p, first = false;
    }
  return worst;
}

double comm_sm_share(const ClusterSpec& cluster, const PlacedGroup& group) {
  const LinkSpec& link = group.nodes_spanned > 1 ? cluster.inter_node : cluster.intra_node;
  if (group.size <= 1 || link.comm_sms <= 0 || cluster.device.sm_count <= 0) return 0.0;
  return std::min(1.0, static_cast<double>(link.comm_sms) / cluster.device.sm_count);
}

PlacedGroup placed_pp_pair(const RankGrid& grid, int stage, int gpus_per_node) {
  if (gpus_per_node < 1) input_error("gpus_per_node ({}) must be >= 1", gpus_per_node);
  if (stage < 0 || stage + 1 >= grid.pp())
    input_error("pipeline stage {} has no next stage (pp = {})", stage, grid.pp());
  // Whether a pair (a, a + stride) crosses a node boundary depends only on a mod
  // gpus_per_node: stop once every residue has been seen.
  const int s = grid.stride(Axis::Pp);
  std::vector<char> seen(static_cast<std::size_t>(gpus_per_node), 0);
  int distinct = 0;
  PlacedGroup worst;
  bool first = true;
  for (int dp = 0; dp < grid.dp() && distinct < gpus_per_node; ++dp)
    for (int tp = 0; tp < grid.tp() && distinct < gpus_per_node; ++tp) {
      int a = grid.rank({dp, tp, stage});
      char& r = seen[static_cast<std::size_t>(a % gpus_per_node)];
      if (r) continue;
      r = 1, ++distinct;
      PlacedGroup p = placed_ranks({a, a + s}, gpus_per_node);
      if (first || worse_than(p, worst)) worst = p, first = false;
    }
  return worst;
}

namespace {

int ring_steps(Collective c, int n) {
  switch (c) {
    case Collective::AllReduce: return 2 * (n - 1);
    case Collective::SendRecv: return 1;
    default: return n - 1;
  }
}

// NCCL runs all-gather and reduce-scatter across nodes as one ring over all n ranks (no
// tree; PAT only at one rank per node), whose latency it models as (n - 1 - (N - 1)) hops
// inside nodes plus N - 1 hops across them (src/graph/tuning.cc, ring: latencies +=
// (nsteps - nInterSteps) * intraLat + nInterSteps * interLat, nsteps = nRanks - 1,
// nInterSteps = nNodes - 1; NVIDIA/nccl 5067397c, the same since 2.8). The hierarchical
// estimate's two phases (estimate() below) charge N - 1 and r - 1 of them; these are the
// intra-node hops left: every node's r - 1 hops, not one node's. The bandwidth terms are
// NCCL's already (one rail per rank across nodes), so only the latency changes; it grows
// with the ranks, not the nodes.
int flat_ring_extra_intra_steps(int n, int N, int r) { return std::max(0, (n - N) - (r - 1)); }

}  // namespace

double CollectiveCost::ring_time_s(Collective c, double bytes, int n, double alpha_s,
                                   double busbw_bytes_per_s) {
  if (n <= 1 || bytes <= 0) return 0;
  return ring_steps(c, n) * alpha_s + bytes * bus_factor(c, n) / busbw_bytes_per_s;
}

CollectiveCost::CollectiveCost(const ClusterSpec& cluster)
    : alpha_intra_s_(cluster.intra_node.latency_us * 1e-6),
      // A long job's losses at scale (training_losses.h): latency per ring step and busbw
      // across nodes; measured curves below are taken as they are.
      alpha_inter_s_(cluster.inter_node.latency_us * 1e-6 + cluster.device.training_losses.step_latency_s()),
      bw_intra_(cluster.intra_node.bandwidth_gbps * 1e9 * cluster.intra_node.efficiency),
      bw_inter_(cluster.inter_node.bandwidth_gbps * 1e9 * cluster.inter_node.efficiency *
                cluster.device.training_losses.network_efficiency()) {
  if (!(bw_intra_ > 0)) input_error("cluster '{}' intra_node.bandwidth_gbps must be > 0", cluster.name);
  // Per (collective, ranks, nodes): busbw vs size; repeated sizes merged (geometric mean).
  struct Acc {
    double sum_log = 0;
    int count = 0;
    double last = 0;
  };
  std::map<std::tuple<Collective, int, int>, std::map<std::int64_t, Acc>> acc;
  for (const auto& s : cluster.device.collective_table) {
    if (s.trivial || s.ranks < 2 || s.bytes <= 0 || s.time_us <= 0) continue;
    auto& e = acc[{s.collective, s.ranks, s.nodes}][s.bytes];
    e.sum_log += std::log(s.time_us * 1e-6);
    e.count += 1;
    e.last = s.time_us * 1e-6;
  }
  for (const auto& [key, sizes] : acc) {
    Curve c;
    for (const auto& [bytes, e] : sizes) {
      double t = e.count == 1 ? e.last : std::exp(e.sum_log / e.count);
      c.log_bytes.push_back(std::log(static_cast<double>(bytes)));
      c.time_s.push_back(t);
      c.busbw.push_back(static_cast<double>(bytes) * bus_factor(std::get<0>(key), std::get<1>(key)) / t);
    }
    curves_.emplace_back(key, std::move(c));
  }
}

const CollectiveCost::Curve* CollectiveCost::find_curve(Collective c, int ranks, int nodes) const {
  for (const auto& [key, curve] : curves_)
    if (key == std::make_tuple(c, ranks, nodes)) return &curve;
  return nullptr;
}

double CollectiveCost::time_s(Collective c, double bytes, const PlacedGroup& group) const {
  return estimate(c, bytes, group).time_s;
}

CollectiveEstimate CollectiveCost::estimate(Collective c, double bytes, const PlacedGroup& g) const {
  if (!(bytes >= 0) || !std::isfinite(bytes)) input_error("collective bytes ({}) must be >= 0", bytes);
  if (g.size < 1 || g.nodes_spanned < 1 || g.ranks_per_node_in_group < 1 ||
      g.nodes_spanned > g.size || g.ranks_per_node_in_group > g.size)
    input_error("placed group (size {}, nodes {}, ranks per node {}) is inconsistent", g.size,
                g.nodes_spanned, g.ranks_per_node_in_group);
  if (g.size == 1 || bytes == 0) return {0.0, TimeSource::Roofline};
  const int n = g.size;

  if (const Curve* cv = find_curve(c, n, g.nodes_spanned)) {
    const double lb = std::log(bytes);
    const double bf = bus_factor(c, n);
    if (lb <= cv->log_bytes.front())  // latency floor below the smallest measured size
      return {cv->time_s.front(),
              lb == cv->log_bytes.front() ? TimeSource::Measured : TimeSource::Interpolated};
    if (lb >= cv->log_bytes.back())
      return {bytes * bf / cv->busbw.back(),
              lb == cv->log_bytes.back() ? TimeSource::Measured : TimeSource::Interpolated};
    auto up = std::lower_bound(cv->log_bytes.begin(), cv->log_bytes.end(), lb);
    std::size_t i = static_cast<std::size_t>(up - cv->log_bytes.begin());
    if (*up == lb) return {cv->time_s[i], TimeSource::Measured};
    double f = (lb - cv->log_bytes[i - 1]) / (cv->log_bytes[i] - cv->log_bytes[i - 1]);
    double lbw = std::log(cv->busbw[i - 1]) + f * (std::log(cv->busbw[i]) - std::log(cv->busbw[i - 1]));
    return {bytes * bf / std::exp(lbw), TimeSource::Interpolated};
  }

  const int N = g.nodes_spanned;
  const int r = g.ranks_per_node_in_group;
  if (N == 1) return {ring_time_s(c, bytes, n, alpha_intra_s_, bw_intra_), TimeSource::Roofline};
  if (!(bw_inter_ > 0))
    input_error("group spans {} nodes but the cluster has no inter_node link", N);
  if (r == 1 || c == Collective::SendRecv)
    return {ring_time_s(c, bytes, c == Collective::SendRecv ? 2 : n, alpha_inter_s_, bw_inter_),
            TimeSource::Roofline};

  double t = 0;
  switch (c) {
    case Collective::AllReduce:
      t = ring_time_s(Collective::ReduceScatter, bytes, r, alpha_intra_s_, bw_intra_) +
          ring_time_s(Collective::AllReduce, bytes / r, N, alpha_inter_s_, bw_inter_) +
          ring_time_s(Collective::AllGather, bytes, r, alpha_intra_s_, bw_intra_);
      break;
    case Collective::ReduceScatter:
      t = ring_time_s(Collective::ReduceScatter, bytes, r, alpha_intra_s_, bw_intra_) +
          ring_time_s(Collective::ReduceScatter, bytes / r, N, alpha_inter_s_, bw_inter_) +
          flat_ring_extra_intra_steps(n, N, r) * alpha_intra_s_;
      break;
    case Collective::AllGather:
      t = ring_time_s(Collective::AllGather, bytes / r, N, alpha_inter_s_, bw_inter_) +
          ring_time_s(Collective::AllGather, bytes, r, alpha_intra_s_, bw_intra_) +
          flat_ring_extra_intra_steps(n, N, r) * alpha_intra_s_;
      break;
    case Collective::AllToAll:
      t = (n - 1) * alpha_inter_s_ + bytes * (n - r) / n / bw_inter_ +
          bytes * (r - 1) / n / bw_intra_;
      break;
    case Collective::Broadcast:
    case Collective::Reduce:
      t = (N - 1) * alpha_inter_s_ + (r - 1) * alpha_intra_s_ + bytes / bw_inter_;
      break;
    case Collective::SendRecv: break;  // handled above
  }
  return {t, TimeSource::Roofline};
}

}  // namespace strata::costmodel
