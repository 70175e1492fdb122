// Small hand-written device profiles and clusters shared by the costmodel tests.
#pragma once
#include "costmodel/cluster_spec.h"
#include "costmodel/device_profile.h"

namespace strata::costmodel::testing {

// A made-up device with round numbers, so expected values are easy to compute by hand.
inline DeviceProfile toy_device() {
  DeviceProfile p;
  p.name = "toy";
  p.source = {"estimate", {{"ref", "unit test"}}};
  p.memory_gib = 80;
  p.memory_bandwidth_gbps = 2000;
  p.peak_tflops = {{DType::Bf16, 400}, {DType::Fp32, 50}};
  p.gemm_efficiency = 0.8;
  p.attention_efficiency = 0.5;
  p.memory_efficiency = 0.9;
  p.reserve_gib = 2;
  return p;
}

// One measured bf16 GEMM row of a device's gemm_table.
inline GemmSample gemm_row(std::int64_t m, std::int64_t n, std::int64_t k, double time_us) {
  GemmSample s;
  s.m = m, s.n = n, s.k = k, s.dtype = DType::Bf16, s.time_us = time_us;
  return s;
}

// 8 ranks per node, NVLink-like 300 GB/s / 3 us inside, 25 GB/s / 6 us across.
inline ClusterSpec toy_cluster() {
  ClusterSpec c;
  c.name = "toy-cluster";
  c.device = toy_device();
  c.gpus_per_node = 8;
  c.nodes = 64;
  c.intra_node = {300, 3, 1.0, {"estimate", {{"ref", "unit test"}}}};
  c.inter_node = {25, 6, 1.0, {"estimate", {{"ref", "unit test"}}}};
  return c;
}

}  // namespace strata::costmodel::testing
