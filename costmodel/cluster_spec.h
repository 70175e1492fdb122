// ClusterSpec: nodes of identical devices; a fast link inside a node (NVLink /
// NVSwitch, or shared memory for CPU ranks) and a network across nodes.
//
// YAML (costmodel/hardware/clusters/*.yaml):
//   name: dgx-h100
//   device: h100-sxm-80gb        # catalog name or path of a DeviceProfile
//   gpus_per_node: 8
//   nodes: 128                   # how many nodes exist (upper bound for --gpus)
//   intra_node: {bandwidth_gbps: 450, latency_us: 3, source: {...}}   # per GPU, one direction
//   inter_node: {bandwidth_gbps: 50,  latency_us: 8, source: {...}}   # per GPU (NIC) one direction
//               (both links take optional efficiency and comm_sms, each sourced in source)
//   profile: path/or/name        # optional measured profile overriding the device's tables
//                                # (a relative path is relative to the cluster file)
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "costmodel/device_profile.h"

namespace strata::costmodel {

// Largest link latency a cluster file may state: 1 s (real links take microseconds).
inline constexpr double kMaxLinkLatencyUs = 1e6;

struct LinkSpec {
  double bandwidth_gbps = 0;  // GB/s per GPU, one direction
  double latency_us = 0;
  // Achievable fraction of bandwidth_gbps for collectives (busbw / link bandwidth);
  // optional in YAML (default 1), states its own source when set.
  double efficiency = 1.0;
  Provenance source;
  // SMs that NCCL's kernels occupy for a collective on this link (one CTA per channel,
  // never shared with compute kernels); optional (0 = not charged), states its source
  // in source.comm_sms. The simulator slows compute overlapped with DP collectives by
  // comm_sms / device sm_count.
  int comm_sms = 0;
};

struct ClusterSpec {
  std::string name;
  DeviceProfile device;
  int gpus_per_node = 1;
  int nodes = 1;
  LinkSpec intra_node;
  LinkSpec inter_node;
  // Name or path given by the cluster's `profile:` key (or apply_profile); empty if none.
  std::string profile;

  long long total_gpus() const { return static_cast<long long>(gpus_per_node) * nodes; }
};

ClusterSpec parse_cluster_spec(const std::string& yaml_text, const std::string& source);
std::string to_yaml(const ClusterSpec& c);
ClusterSpec load_cluster(const std::string& name_or_path);
// The device of load_cluster(name_or_path), or nullopt when it cannot be loaded (a plan whose
// cluster was renamed or removed since it was written).
std::optional<DeviceProfile> try_load_cluster_device(const std::string& name_or_path);
// Applies a measured profile (a cluster's `profile:` key, or `--profile FILE`):
// its GEMM, collective and op tables (with their sources) replace the device's where
// non-empty; when its top-level source kind is "measured", its memory bandwidth and
// efficiencies (fitted by calibration) replace the device's too. Peaks, memory
// capacity and reserve stay the device's. Records `profile_name` in cluster.profile.
void apply_profile(ClusterSpec& cluster, const DeviceProfile& measured,
                   const std::string& profile_name);
std::vector<std::string> cluster_catalog_names();

}  // namespace strata::costmodel
