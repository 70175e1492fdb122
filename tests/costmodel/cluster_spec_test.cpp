#include "costmodel/cluster_spec.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "common/errors.h"
#include "tests/input_error_of.h"

namespace sc = strata::costmodel;
namespace fs = std::filesystem;

namespace {

std::string cluster_error_of(const std::string& yaml) {
  return strata::testing::input_error_of([&] { sc::parse_cluster_spec(yaml, "c.yaml"); });
}

const char* kCluster = R"(
name: mine
device: a100-sxm-80gb
gpus_per_node: 8
nodes: 4
intra_node: {bandwidth_gbps: 300, latency_us: 3, source: {kind: datasheet, ref: x}}
inter_node: {bandwidth_gbps: 25, latency_us: 6, efficiency: 0.9, source: {kind: estimate, ref: y}}
)";

}  // namespace

TEST(ClusterSpec, CatalogClustersLoadWithTheirDevices) {
  auto names = sc::cluster_catalog_names();
  for (const char* want : {"dgx-a100", "dgx-h100", "h200-node", "local-cpu"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (const auto& n : names) {
    auto c = sc::load_cluster(n);
    EXPECT_EQ(c.name, n);
    EXPECT_GT(c.gpus_per_node, 0);
    EXPECT_GT(c.nodes, 0);
    EXPECT_GT(c.intra_node.bandwidth_gbps, 0);
    EXPECT_FALSE(c.intra_node.source.kind.empty());
    if (c.nodes > 1) {
      EXPECT_GT(c.inter_node.bandwidth_gbps, 0) << n;
      EXPECT_FALSE(c.inter_node.source.kind.empty()) << n;
      EXPECT_LT(c.inter_node.bandwidth_gbps, c.intra_node.bandwidth_gbps) << n;
    }
  }
  auto a = sc::load_cluster("dgx-a100");
  EXPECT_EQ(a.device.name, "a100-sxm-80gb");
  EXPECT_EQ(a.gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(a.intra_node.bandwidth_gbps, 300);
  EXPECT_DOUBLE_EQ(a.inter_node.bandwidth_gbps, 25);  // 200 Gb/s HDR
  EXPECT_GE(sc::load_cluster("dgx-h100").total_gpus(), 16384);
  auto cpu = sc::load_cluster("local-cpu");
  EXPECT_EQ(cpu.device.name, "cpu-host");
  EXPECT_EQ(cpu.nodes, 1);
}

TEST(ClusterSpec, YamlRoundTripIsSelfContained) {
  auto c = sc::parse_cluster_spec(kCluster, "c.yaml");
  EXPECT_DOUBLE_EQ(c.inter_node.efficiency, 0.9);
  auto y = sc::to_yaml(c);
  auto d = sc::parse_cluster_spec(y, "roundtrip.yaml");
  EXPECT_EQ(d.name, c.name);
  EXPECT_EQ(d.gpus_per_node, c.gpus_per_node);
  EXPECT_EQ(d.nodes, c.nodes);
  EXPECT_EQ(d.intra_node.bandwidth_gbps, c.intra_node.bandwidth_gbps);
  EXPECT_EQ(d.inter_node.latency_us, c.inter_node.latency_us);
  EXPECT_EQ(d.inter_node.efficiency, c.inter_node.efficiency);
  EXPECT_EQ(d.inter_node.source.fields, c.inter_node.source.fields);
  EXPECT_EQ(d.device.name, c.device.name);
  EXPECT_EQ(d.device.peak_tflops, c.device.peak_tflops);
  EXPECT_EQ(sc::to_yaml(d), y);
}

TEST(ClusterSpec, BadInputNamesTheKey) {
  std::string base = kCluster;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  std::string e = cluster_error_of(with("gpus_per_node: 8", "gpus_per_node: 0"));
  EXPECT_NE(e.find("gpus_per_node"), std::string::npos) << e;
  e = cluster_error_of(with("nodes: 4", "nodes: -1"));
  EXPECT_NE(e.find("nodes"), std::string::npos) << e;
  e = cluster_error_of(with("device: a100-sxm-80gb", "device: a100-sxm"));
  EXPECT_NE(e.find("device"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean"), std::string::npos) << e;
  EXPECT_NE(e.find("a100-sxm-80gb"), std::string::npos) << e;
  e = cluster_error_of(with("bandwidth_gbps: 25", "bandwidth_gbps: -25"));
  EXPECT_NE(e.find("inter_node.bandwidth_gbps"), std::string::npos) << e;
  e = cluster_error_of(with("efficiency: 0.9,", "efficiency: 0.9, comm_sms: 16,"));
  EXPECT_NE(e.find("inter_node.comm_sms"), std::string::npos) << e;
  EXPECT_NE(e.find("source.comm_sms"), std::string::npos) << e;
  auto sourced = sc::parse_cluster_spec(
      with("efficiency: 0.9, source: {kind: estimate, ref: y}",
           "efficiency: 0.9, comm_sms: 16, source: {kind: estimate, ref: y, comm_sms: z}"),
      "c.yaml");
  EXPECT_EQ(sourced.inter_node.comm_sms, 16);
  EXPECT_EQ(sc::parse_cluster_spec(sc::to_yaml(sourced), "round.yaml").inter_node.comm_sms, 16);
  e = cluster_error_of(base + "switch: fat-tree\n");
  EXPECT_NE(e.find("switch"), std::string::npos) << e;
  // Several nodes need a network.
  std::string no_net = base.substr(0, base.find("inter_node"));
  e = cluster_error_of(no_net);
  EXPECT_NE(e.find("inter_node"), std::string::npos) << e;
  try {
    sc::load_cluster("dgx-a10");
    FAIL();
  } catch (const strata::InputError& ex) {
    std::string m = ex.what();
    EXPECT_NE(m.find("did you mean: dgx-a100"), std::string::npos) << m;
  }
  EXPECT_THROW(sc::load_cluster("missing/cluster.yaml"), strata::InputError);
}

TEST(ClusterSpec, MeasuredProfileReplacesTheDeviceTables) {
  fs::path dir = fs::temp_directory_path() / "strata_costmodel_cluster_test";
  fs::create_directories(dir);
  std::ofstream(dir / "measured.yaml") << R"(
name: a100-sxm-80gb
source: {kind: measured, tool: strata calibrate, host: node1, date: 2025-12-02}
memory_gib: 80
memory_bandwidth_gbps: 1800
peak_tflops: {bf16: 312}
efficiency: {gemm: 0.71, attention: 0.45, memory: 0.88}
gemm_table:
  source: {kind: measured, tool: strata calibrate, host: node1}
  rows:
    - {m: 4096, n: 4096, k: 4096, dtype: bf16, time_us: 520}
collective_table:
  source: {kind: measured, tool: strata calibrate, host: node1}
  rows:
    - {collective: all_reduce, ranks: 8, bytes: 1048576, time_us: 20}
op_table:
  source: {kind: measured, tool: strata calibrate, host: node1}
  rows:
    - {op: norm, work: 65536, fwd_us: 3, bwd_us: 7}
)";
  std::string cluster = std::string(kCluster) + "profile: measured.yaml\n";
  std::ofstream(dir / "cluster.yaml") << cluster;
  auto c = sc::load_cluster((dir / "cluster.yaml").string());  // relative to the cluster file
  EXPECT_EQ(c.profile, "measured.yaml");
  ASSERT_EQ(c.device.gemm_table.size(), 1u);
  EXPECT_TRUE(c.device.gemm_source.measured());
  ASSERT_EQ(c.device.collective_table.size(), 1u);
  ASSERT_EQ(c.device.op_table.size(), 1u);
  EXPECT_TRUE(c.device.op_source.measured());
  EXPECT_DOUBLE_EQ(c.device.gemm_efficiency, 0.71);
  EXPECT_DOUBLE_EQ(c.device.memory_bandwidth_gbps, 1800);
  EXPECT_DOUBLE_EQ(c.device.peak_flops(sc::DType::Bf16), 312e12);  // datasheet peak kept
  EXPECT_DOUBLE_EQ(c.device.memory_gib, 80);
  // The round trip keeps the merged tables and the profile's name.
  auto d = sc::parse_cluster_spec(sc::to_yaml(c), "rt.yaml");
  EXPECT_EQ(d.profile, "measured.yaml");
  EXPECT_EQ(d.device.gemm_table.size(), 1u);
  EXPECT_EQ(d.device.op_table.size(), 1u);
  // A missing profile names the key.
  std::ofstream(dir / "bad.yaml") << std::string(kCluster) + "profile: nothere.yaml\n";
  try {
    sc::load_cluster((dir / "bad.yaml").string());
    FAIL();
  } catch (const strata::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("profile"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}
