#include "costmodel/cluster_spec.h"

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "common/checked_math.h"
#include "common/errors.h"
#include "common/yaml_reader.h"
#include "costmodel/detail/catalog_lookup.h"
#include "costmodel/detail/yaml_emit.h"

namespace strata::costmodel {

namespace detail {
const EmbeddedFiles& embedded_clusters();
}  // namespace detail

namespace {

LinkSpec parse_link(const YamlReader& r) {
  r.expect_keys({"bandwidth_gbps", "latency_us", "efficiency", "comm_sms", "source"});
  LinkSpec l;
  l.bandwidth_gbps = r.get_positive("bandwidth_gbps");
  if (l.bandwidth_gbps > kMaxBandwidthGbps)
    r.fail("bandwidth_gbps", fmt::format("{} GB/s is beyond any interconnect (limit {} GB/s)",
                                         l.bandwidth_gbps, kMaxBandwidthGbps));
  l.latency_us = r.get_double("latency_us");
  // A link's per-message latency is microseconds (NVLink ~3, InfiniBand ~5-10, Ethernet
  // ~10-100); a second or more is a typo or a unit mix-up, and 1e308 printed a 300-digit
  // step time.
  if (!(l.latency_us >= 0 && l.latency_us <= kMaxLinkLatencyUs))
    r.fail("latency_us", fmt::format("{} must be >= 0 and at most {:.0f} us (1 s): no interconnect "
                                     "takes that long per message (microseconds expected)",
                                     l.latency_us, kMaxLinkLatencyUs));
  if (r.has("efficiency")) {
    l.efficiency = r.get_double("efficiency");
    if (!(l.efficiency > 0 && l.efficiency <= 1))
      r.fail("efficiency", fmt::format("{} must be in (0, 1]", l.efficiency));
  }
  l.source = detail::parse_provenance(r.child("source"));
  l.comm_sms = static_cast<int>(r.get_int_in("comm_sms", 0, 100000, 0));
  if (l.comm_sms > 0 && !l.source.fields.count("comm_sms"))
    r.fail("comm_sms", "needs source.comm_sms saying where the SM count comes from");
  return l;
}

std::string link_yaml(const LinkSpec& l) {
  std::string s = fmt::format("{{bandwidth_gbps: {}, latency_us: {}", detail::yaml_number(l.bandwidth_gbps),
                              detail::yaml_number(l.latency_us));
  if (l.efficiency != 1.0) s += ", efficiency: " + detail::yaml_number(l.efficiency);
  if (l.comm_sms > 0) s += fmt::format(", comm_sms: {}", l.comm_sms);
  return s + ",\n    source: " + detail::yaml_provenance(l.source) + "}";
}

// A relative path inside a cluster file is relative to that file's folder.
std::string resolve_relative(const std::string& ref, const std::string& source) {
  namespace fs = std::filesystem;
  if (ref.find('/') == std::string::npos && ref.find(".yaml") == std::string::npos &&
      ref.find(".yml") == std::string::npos)
    return ref;  // a catalog name
  fs::path p(ref);
  if (p.is_absolute()) return ref;
  std::error_code ec;
  if (fs::is_regular_file(source, ec)) {
    fs::path rel = fs::path(source).parent_path() / p;
    if (fs::is_regular_file(rel, ec)) return rel.string();
  }
  return ref;
}

}  // namespace

void apply_profile(ClusterSpec& cluster, const DeviceProfile& measured,
                   const std::string& profile_name) {
  DeviceProfile& d = cluster.device;
  // A profile describes one device: applying another device's numbers would plan one
  // device under another's name. A datasheet names its device; a measured profile says
  // which backend measured it (cpu ranks or a CUDA GPU).
  if (!measured.source.measured() && measured.name != d.name)
    input_error("profile '{}' is the datasheet of device {}, but cluster {} has device {}: a profile "
                "adds measured tables to the cluster's own device; pick a cluster with device {} "
                "(`strata clusters`) or give a profile measured on {}",
                profile_name, measured.name, cluster.name, d.name, measured.name, d.name);
  if (measured.source.measured()) {
    const auto b = measured.source.fields.find("backend");
    const bool cpu_device = d.compute_dtype == DType::Fp32;
    if (b != measured.source.fields.end() && (b->second == "cpu") != cpu_device) {
      const auto dev = measured.source.fields.find("device");
      input_error("profile '{}' was measured on {} ({} backend), but cluster {} has device {} ({}): "
                  "its tables do not describe that device",
                  profile_name, dev != measured.source.fields.end() ? dev->second : "another device",
                  b->second, cluster.name, d.name, cpu_device ? "CPU ranks" : "a GPU");
    }
  }
  // Each table the profile measured replaces the device's, with the source it was measured by.
  auto take_measured = [](auto& table, auto& source, const auto& measured_table, const auto& measured_source) {
    if (measured_table.empty()) return;
    table = measured_table;
    source = measured_source;
  };
  take_measured(d.gemm_table, d.gemm_source, measured.gemm_table, measured.gemm_source);
  take_measured(d.collective_table, d.collective_source, measured.collective_table, measured.collective_source);
  take_measured(d.op_table, d.op_source, measured.op_table, measured.op_source);
  take_measured(d.block_table, d.block_source, measured.block_table, measured.block_source);
  // A fitted section travels with the profile it was fitted for; a measured profile
  // without one keeps the device's (its tables say nothing about a long job's losses).
  if (measured.training_losses.present) d.training_losses = measured.training_losses;
  if (measured.source.measured()) {
    d.memory_bandwidth_gbps = measured.memory_bandwidth_gbps;
    d.gemm_efficiency = measured.gemm_efficiency;
    d.attention_efficiency = measured.attention_efficiency;
    d.attention_cudnn_efficiency = measured.attention_cudnn_efficiency;
    d.attention_flash1_efficiency = measured.attention_flash1_efficiency;
    d.memory_efficiency = measured.memory_efficiency;
    d.efficiency_source = measured.efficiency_source.kind.empty() ? measured.source
                                                                  : measured.efficiency_source;
  }
  cluster.profile = profile_name;
}

ClusterSpec parse_cluster_spec(const std::string& yaml_text, const std::string& source) {
  YamlReader r(parse_yaml(yaml_text, source), source);
  r.expect_keys({"name", "device", "gpus_per_node", "nodes", "intra_node", "inter_node",
                 "profile", "measured_profile", "description"});
  ClusterSpec c;
  c.name = r.get_string("name");
  if (c.name.empty()) r.fail("name", "must not be empty");
  c.gpus_per_node = static_cast<int>(r.get_int_in("gpus_per_node", 1, 1 << 20));
  c.nodes = static_cast<int>(r.get_int_in("nodes", 1, 1 << 24));
  if (checked_mul(c.gpus_per_node, c.nodes, "cluster gpus_per_node * nodes") > (1LL << 30))
    r.fail("nodes", fmt::format("gpus_per_node * nodes ({} x {}) exceeds 2^30 ranks",
                                c.gpus_per_node, c.nodes));

  YAML::Node dev = r.node()["device"];
  if (dev && dev.IsMap()) {
    c.device = detail::parse_device_profile_node(r.child("device"));
  } else {
    std::string ref = r.get_string("device");
    try {
      c.device = load_device_profile(resolve_relative(ref, source));
    } catch (const InputError& e) {
      r.fail("device", e.what());
    }
  }
  c.intra_node = parse_link(r.child("intra_node"));
  if (r.has("inter_node")) {
    c.inter_node = parse_link(r.child("inter_node"));
  } else if (c.nodes > 1) {
    r.fail("inter_node", fmt::format("missing required key (the cluster has {} nodes)", c.nodes));
  }
  // The SMs NCCL takes for a link's collectives are SMs of the device: never more than it has.
  for (const auto& [key, link] : {std::pair<const char*, const LinkSpec*>{"intra_node", &c.intra_node},
                                  {"inter_node", &c.inter_node}})
    if (c.device.sm_count > 0 && link->comm_sms > c.device.sm_count)
      r.child(key).fail("comm_sms", fmt::format("{} exceeds the {} SMs of device {} (sm_count)",
                                                link->comm_sms, c.device.sm_count, c.device.name));
  if (r.has("profile")) {
    std::string ref = r.get_string("profile");
    DeviceProfile measured;
    try {
      measured = load_device_profile(resolve_relative(ref, source));
    } catch (const InputError& e) {
      r.fail("profile", e.what());
    }
    apply_profile(c, measured, ref);
  } else if (r.has("measured_profile")) {
    // Written by to_yaml: the tables are already merged into the inline device.
    c.profile = r.get_string("measured_profile");
  }
  return c;
}

std::string to_yaml(const ClusterSpec& c) {
  std::string o;
  o += "name: " + detail::yaml_quote(c.name) + "\n";
  o += fmt::format("gpus_per_node: {}\nnodes: {}\n", c.gpus_per_node, c.nodes);
  o += "intra_node: " + link_yaml(c.intra_node) + "\n";
  if (c.inter_node.bandwidth_gbps > 0) o += "inter_node: " + link_yaml(c.inter_node) + "\n";
  if (!c.profile.empty())
    o += "measured_profile: " + detail::yaml_quote(c.profile) + "  # merged into device below\n";
  o += "device:\n" + detail::device_profile_yaml(c.device, 2);
  return o;
}

std::vector<std::string> cluster_catalog_names() {
  return detail::catalog_names(detail::embedded_clusters());
}

ClusterSpec load_cluster(const std::string& name_or_path) {
  const detail::CatalogText t = detail::read_catalog_entry(
      name_or_path, detail::embedded_clusters(), "costmodel/hardware/clusters", "cluster");
  return parse_cluster_spec(t.text, t.source);
}

std::optional<DeviceProfile> try_load_cluster_device(const std::string& name_or_path) {
  try {
    return load_cluster(name_or_path).device;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace strata::costmodel
