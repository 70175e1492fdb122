// CollectiveCost: time of one collective on a group of ranks placed on nodes.
//
// `bytes` follows nccl-tests' "size": the all-reduce buffer; the full (gathered)
// buffer for all-gather and reduce-scatter; the whole send buffer for all-to-all;
// the message for broadcast, reduce and send/recv.
//
// Alpha-beta ring model on one level (group inside one node, or one rank per node):
//   time = steps(c, n) * alpha + bytes * bus_factor(c, n) / busbw
//   steps: all-reduce 2(n-1); all-gather, reduce-scatter, all-to-all, broadcast,
//   reduce (n-1); send/recv 1. alpha = link latency; busbw = link bandwidth per GPU,
//   one direction, times the link's efficiency (ClusterSpec LinkSpec).
// Hierarchical when the group spans N > 1 nodes with r > 1 ranks on each
// (r = ranks_per_node_in_group):
//   all-reduce     = RS_intra(bytes, r) + AR_inter(bytes / r, N) + AG_intra(bytes, r)
//   reduce-scatter = RS_intra(bytes, r) + RS_inter(bytes / r, N) + extra
//   all-gather     = AG_inter(bytes / r, N) + AG_intra(bytes, r) + extra
//   extra = ((n - N) - (r - 1)) * alpha_intra: NCCL's one ring over all n ranks has
//   n - N hops inside nodes, every node's, where the two phases count one node's
//   all-to-all     = (n-1) * alpha_inter + bytes (n-r)/n / bw_inter + bytes (r-1)/n / bw_intra
//   broadcast/reduce = (N-1) alpha_inter + (r-1) alpha_intra + bytes / bw_inter
//   send/recv across nodes = alpha_inter + bytes / bw_inter
// (each of the r ranks of a node drives its own NIC rail, so the inter-node phase
// moves bytes / r per rank).
// Measured: when the device profile has a non-trivial collective table for
// (collective, ranks == size, nodes == nodes_spanned), busbw is interpolated
// linearly in log(bytes) between the two nearest measured sizes; below the smallest
// measured size the smallest size's time is used (latency floor), above the largest
// the largest size's busbw (saturation). time = bytes * bus_factor / busbw.
#pragma once
#include <compare>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "costmodel/cluster_spec.h"
#include "costmodel/collective.h"
#include "costmodel/gemm_cost.h"
#include "costmodel/rank_grid.h"

namespace strata::costmodel {

struct PlacedGroup {
  int size = 1;                     // ranks in the group
  int nodes_spanned = 1;            // distinct nodes the group touches
  int ranks_per_node_in_group = 1;  // most ranks of the group on any one node
  auto operator<=>(const PlacedGroup&) const = default;  // ordered: a cache key
};

// Placement of an explicit list of ranks; node = rank / gpus_per_node.
PlacedGroup placed_ranks(const std::vector<int>& ranks, int gpus_per_node);
// The worst-placed group along `axis` (most nodes spanned, then fewest ranks per
// node): collectives synchronise the step, so the slowest group sets the time.
// Under the default tp-dp-pp order with power-of-two sizes every group has the
// same shape; with e.g. tp = 3 on 8-GPU nodes some TP groups straddle two nodes.
PlacedGroup placed_group(const RankGrid& grid, Axis axis, int gpus_per_node);
// The worst-placed of the groups {b, b + stride, ..., b + (n - 1) stride} with bases
// b = q * stride * n + r (0 <= r < stride) that tile ranks 0 .. world - 1 (world a multiple
// of stride * n): every axis of a RankGrid, and the expert groups of Megatron's folding,
// are such groups. O(min(world, lcm(gpus_per_node, stride * n)) + stride) steps: no rank
// is listed.
PlacedGroup placed_strided_groups(long long n, long long stride, long long world, int gpus_per_node);
// Placement of the pipeline send/recv pair between pp stages `stage` and `stage+1`
// (worst over the dp x tp pairs); {2, 1 or 2, ...}.
PlacedGroup placed_pp_pair(const RankGrid& grid, int stage, int gpus_per_node);
// Share of the device's SMs that NCCL's kernels hold while a collective of `group` runs
// beside compute: the link's comm_sms over the device's sm_count (the inter-node link
// when the group spans nodes); 0 when either is not given.
double comm_sm_share(const ClusterSpec& cluster, const PlacedGroup& group);

struct CollectiveEstimate {
  double time_s = 0;
  TimeSource source = TimeSource::Roofline;  // Measured/Interpolated: from the table
};

class CollectiveCost {
 public:
  explicit CollectiveCost(const ClusterSpec& cluster);

  // 0 for a group of size 1 or bytes == 0. bytes >= 0 (InputError otherwise).
  double time_s(Collective c, double bytes, const PlacedGroup& group) const;
  CollectiveEstimate estimate(Collective c, double bytes, const PlacedGroup& group) const;

  // One-level ring time on a link (exposed for tests and reports).
  static double ring_time_s(Collective c, double bytes, int n, double alpha_s,
                            double busbw_bytes_per_s);

 private:
  struct Curve {
    std::vector<double> log_bytes;  // sorted
    std::vector<double> busbw;      // bytes/s, same length
    std::vector<double> time_s;
  };
  const Curve* find_curve(Collective c, int ranks, int nodes) const;
  double alpha_intra_s_ = 0, alpha_inter_s_ = 0;
  double bw_intra_ = 0, bw_inter_ = 0;  // bytes/s per rank, one direction, after efficiency
  std::vector<std::pair<std::tuple<Collective, int, int>, Curve>> curves_;
};

}  // namespace strata::costmodel
