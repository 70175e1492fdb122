// Shared by the simulator tests: a synthetic model with uniform blocks, a cluster whose
// communication is free, strategy shorthand and the breakdown sum.
#pragma once
#include <cstdint>
#include <string_view>

#include "costmodel/cluster_spec.h"
#include "models/model_spec.h"
#include "planner/prediction.h"
#include "planner/strategy.h"
#include "tests/tables_only_cluster.h"
#include "tests/test_models.h"

namespace strata::planner::test_fixtures {

// Vocabulary 8: the LM head and embedding cost next to nothing.
inline models::ModelSpec synthetic_model() {
  return strata::testing::test_model("synthetic", 8, 1024, 16, 16, 4096, 8, 256);
}

// Communication and memory traffic are free: only GEMM / attention FLOPs take time.
inline costmodel::ClusterSpec free_comm_cluster() {
  costmodel::ClusterSpec c = strata::testing::tables_only_cluster("dgx-a100");
  c.name = "free-comm";
  c.intra_node.bandwidth_gbps = c.inter_node.bandwidth_gbps = 1e12;
  c.intra_node.latency_us = c.inter_node.latency_us = 0;
  c.device.memory_bandwidth_gbps = 1e12;
  c.device.kernel_overhead_us = 0;  // per-kernel costs would make the embedding stage slower
  return c;
}

inline Strategy strategy(int dp, int tp, int pp, std::int64_t mb, std::int64_t gb) {
  return {.dp = dp, .tp = tp, .pp = pp, .micro_batch = mb, .global_batch = gb, .precision = {}};
}

inline double breakdown_sum(const Breakdown& b) {
  return b.compute + b.tp_comm + b.pp_comm + b.dp_comm + b.optimizer + b.bubble + b.straggler;
}

// Whether one of the prediction's notes contains `text`.
inline bool has_note(const Prediction& p, std::string_view text) {
  for (const auto& n : p.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}


}  // namespace strata::planner::test_fixtures
