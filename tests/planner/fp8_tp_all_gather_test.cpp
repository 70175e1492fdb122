// TorchTitan's float8 tensor parallelism gathers the float8 cast (SoftwareStack::
// fp8_tp_all_gather): under FP8 with sequence parallelism, the all-gathers feeding FP8 GEMMs
// move 1 byte per element and the reduce-scatters stay 16-bit. Checked by counting a block's
// collectives by hand on a link whose collective time is proportional to the bytes.
#include <string>

#include <gtest/gtest.h>

#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "planner/simulator.h"
#include "planner/strategy.h"
#include "tests/tables_only_cluster.h"

namespace strata::planner {
namespace {

models::ModelSpec dense(int layers) {
  return models::parse_model_yaml("name: small\nlayers: " + std::to_string(layers) +
                                      "\nhidden: 1024\nheads: 8\nffn: 4096\nvocab: 4096\nseq_len: 1024\n"
                                      "activation: swiglu\nnorm: rmsnorm\ntied_embeddings: false\n",
                                  "small.yaml");
}

// Inside one node, no latency, no measured curves: every collective's time is its bytes
// over the link's bandwidth, and at equal bytes an all-gather takes what a reduce-scatter does.
double tp_comm_s(int layers, const std::string& precision, bool fp8_gather) {
  costmodel::ClusterSpec c = strata::testing::tables_only_cluster("dgx-h100");
  c.device.collective_table.clear();
  c.intra_node.latency_us = 0;
  costmodel::SoftwareStack stack = costmodel::load_software_stack("torchtitan-2024");
  stack.fp8_tp_all_gather = fp8_gather;
  stack.sp_backward_regather = true;  // the count below re-gathers as Megatron does
  Strategy s;
  s.tp = 2, s.pp = 1, s.dp = 1;
  s.micro_batch = 1, s.global_batch = 1;
  s.zero = 3;
  s.sequence_parallel = true;
  s.precision = precision;
  SimulateOptions o;
  o.stack = &stack;
  return simulate(dense(layers), c, s, o).prediction.breakdown_s.tp_comm;
}

// A block's TP traffic, per layer added: two column-parallel inputs (attention, feed-forward),
// each gathered in the forward, re-gathered in the backward and its gradient reduce-scattered
// (2 x 3), and two row-parallel outputs, reduce-scattered in the forward and their gradient
// gathered in the backward (2 x 2): 6 all-gathers and 4 reduce-scatters of the same bytes.
// With the float8 gathers: 6 x 1/2 + 4 = 7 of 10.
TEST(Fp8TpAllGather, TheGathersFeedingFp8GemmsMoveHalfTheBytes) {
  const double off = tp_comm_s(4, "fp8", false) - tp_comm_s(2, "fp8", false);
  const double on = tp_comm_s(4, "fp8", true) - tp_comm_s(2, "fp8", true);
  ASSERT_GT(off, 0.0);
  EXPECT_NEAR(on / off, 0.7, 1e-9);
}

TEST(Fp8TpAllGather, OnlyUnderFp8) {
  EXPECT_DOUBLE_EQ(tp_comm_s(2, "bf16", true), tp_comm_s(2, "bf16", false));
  EXPECT_TRUE(costmodel::load_software_stack("torchtitan-2024").fp8_tp_all_gather);
  EXPECT_TRUE(costmodel::load_software_stack("torchtitan-2024-compile").fp8_tp_all_gather);
  EXPECT_FALSE(costmodel::load_software_stack("nemo-2024-perf").fp8_tp_all_gather);
}

}  // namespace
}  // namespace strata::planner
