#include "planner/simulator.h"
#include "common/json_text.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "costmodel/block_table.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/collective_cost.h"
#include "models/model_graph.h"
#include "models/model_spec.h"
#include "planner/detail/pipeline_walk.h"
#include "planner/schedule.h"
#include "tests/tables_only_cluster.h"
#include "tests/planner/simulator_fixtures.h"
#include "tests/input_error_of.h"

namespace strata::planner {
namespace {

using namespace test_fixtures;

// ---- The simulator end to end ---------------------------------------------------------

TEST(Simulator, UniformStagesMatchTheOneFOneBClosedFormEndToEnd) {
  const auto model = synthetic_model();
  const auto cluster = free_comm_cluster();
  for (int pp : {2, 4}) {
    for (int m : {1, 4, 8}) {
      SimulateOptions opt;
      opt.timeline = true;
      const auto r = simulate(model, cluster, strategy(1, 1, pp, 1, m), opt);
      // Stage 1 holds blocks only: its forward / backward are tf / tb.
      double tf = 0, tb = 0;
      for (const auto& e : r.timeline)
        if (e.stage == 1 && e.stream == "compute" && e.microbatch == 0)
          (e.name[0] == 'F' ? tf : tb) = e.end_s - e.start_s;
      ASSERT_GT(tf, 0);
      ASSERT_GT(tb, tf);
      const double closed = (m + pp - 1) * (tf + tb);
      const auto& p = r.prediction;
      EXPECT_NEAR(p.iteration_s, closed, 1e-3 * closed) << "pp " << pp << " m " << m;
      EXPECT_NEAR(p.breakdown_s.bubble, (pp - 1) * (tf + tb), 1e-3 * closed);
      EXPECT_NEAR(p.bubble_fraction, static_cast<double>(pp - 1) / (m + pp - 1), 1e-3);
      EXPECT_NEAR(p.breakdown_s.pp_comm, 0.0, 1e-9);
      EXPECT_NEAR(breakdown_sum(p.breakdown_s), p.iteration_s, 1e-9 * p.iteration_s);
    }
  }
}

// Uneven stages: 2 blocks on the first, 6 and the head on the second. The second sets the
// pace (1F1B: f0 + m (f1 + b1) + b0 with free communication); the breakdown reads its steps,
// so the light stage's waiting is not reported as a bubble: compute m (f1 + b1), bubble the
// pipeline's fill and drain f0 + b0.
TEST(Simulator, UnevenStagesAreReadFromTheBusiestStage) {
  const auto model = synthetic_model();
  const auto cluster = free_comm_cluster();
  const int m = 8;
  SimulateOptions opt;
  opt.timeline = true;
  opt.stage_layers = {{0, 1, 2}, {3, 4, 5, 6, 7, 8, 9}};
  const auto r = simulate(model, cluster, strategy(1, 1, 2, 1, m), opt);
  double f[2] = {0, 0}, b[2] = {0, 0};
  for (const auto& e : r.timeline)
    if (e.stream == "compute" && e.microbatch == 0) (e.name[0] == 'F' ? f : b)[e.stage] = e.end_s - e.start_s;
  ASSERT_GT(f[1], 2 * f[0]);
  const auto& p = r.prediction;
  EXPECT_NEAR(p.breakdown_s.compute, m * (f[1] + b[1]), 1e-6 * p.iteration_s);
  EXPECT_NEAR(p.breakdown_s.bubble, f[0] + b[0], 1e-6 * p.iteration_s);
  EXPECT_NEAR(breakdown_sum(p.breakdown_s), p.iteration_s, 1e-9 * p.iteration_s);
  EXPECT_NEAR(p.bubble_fraction, p.breakdown_s.bubble / p.iteration_s, 1e-12);
}

class SimulatorOnGpt2 : public ::testing::Test {
 protected:
  models::ModelSpec model = models::load_model("gpt2-124m");
  costmodel::ClusterSpec cluster = strata::testing::tables_only_cluster("dgx-a100");

  Prediction under(const costmodel::SoftwareStack& stack, const Strategy& s) const {
    SimulateOptions o;
    o.stack = &stack;
    return simulate(model, cluster, s, o).prediction;
  }
  // One collective of `params` gradients or weights of `bytes` each over the 8 ranks of a node.
  double dp8_s(costmodel::Collective k, double params, double bytes) const {
    return costmodel::CollectiveCost(cluster).time_s(k, params * bytes, costmodel::PlacedGroup{8, 1, 8});
  }
  double params() const { return models::ModelGraph::build(model, 4).total_params(); }
};

TEST_F(SimulatorOnGpt2, SinglePipelineStageHasNoBubbleAndNoP2P) {
  for (int tp : {1, 2, 4})
    for (Recompute rc : {Recompute::None, Recompute::Full}) {
      Strategy s = strategy(8 / tp, tp, 1, 2, 64);
      s.recompute = rc;
      const auto p = simulate(model, cluster, s).prediction;
      EXPECT_EQ(p.breakdown_s.bubble, 0.0);
      EXPECT_EQ(p.bubble_fraction, 0.0);
      EXPECT_EQ(p.breakdown_s.pp_comm, 0.0);
      EXPECT_EQ(p.stage_memory_gib.size(), 1u);
    }
}

TEST_F(SimulatorOnGpt2, NoTensorParallelMeansNoTpComm) {
  for (int pp : {1, 2, 4}) {
    const auto p = simulate(model, cluster, strategy(8 / pp, 1, pp, 1, 64)).prediction;
    EXPECT_EQ(p.breakdown_s.tp_comm, 0.0);
  }
  const auto p = simulate(model, cluster, strategy(4, 2, 1, 1, 64)).prediction;
  EXPECT_GT(p.breakdown_s.tp_comm, 0.0);
}

TEST_F(SimulatorOnGpt2, BreakdownSumsToTheIteration) {
  for (int tp : {1, 2, 4})
    for (int pp : {1, 2}) {
      if (tp * pp > 8) continue;
      for (int zero : {0, 1}) {
        Strategy s = strategy(8 / (tp * pp), tp, pp, 2, 64);
        s.zero = zero;
        s.sequence_parallel = tp > 1;
        const auto p = simulate(model, cluster, s).prediction;
        EXPECT_NEAR(breakdown_sum(p.breakdown_s), p.iteration_s, 1e-9 * p.iteration_s);
        EXPECT_GE(p.breakdown_s.bubble, -1e-12);
        EXPECT_GE(p.breakdown_s.dp_comm, 0.0);
        EXPECT_GT(p.breakdown_s.optimizer, 0.0);
        EXPECT_NEAR(p.bubble_fraction, p.breakdown_s.bubble / p.iteration_s, 1e-12);
      }
    }
}

TEST(Simulator, InterleavedHasASmallerBubbleThanOneFOneB) {
  // Blocks dominate (tiny vocabulary), so chunks are near uniform; real links and latency.
  const auto model = synthetic_model();
  const auto cluster = strata::testing::tables_only_cluster("dgx-a100");
  for (int pp : {2, 4}) {
    Strategy a = strategy(1, 1, pp, 1, 2 * pp);  // m = 2p
    Strategy b = a;
    b.vpp = 8 / pp;
    b.schedule = ScheduleKind::Interleaved;
    const auto pa = simulate(model, cluster, a).prediction;
    const auto pb = simulate(model, cluster, b).prediction;
    EXPECT_LT(pb.breakdown_s.bubble, pa.breakdown_s.bubble) << "pp " << pp;
    EXPECT_LT(pb.bubble_fraction, pa.bubble_fraction) << "pp " << pp;
    EXPECT_LT(pb.iteration_s, pa.iteration_s) << "pp " << pp;
  }
}

TEST_F(SimulatorOnGpt2, ExposedDpCommGrowsWithDp) {
  // Same work per replica (micro-batch 4, 4 micro-batches), more replicas: 2 .. 64 GPUs.
  double prev = -1;
  double first = 0;
  for (int dp : {2, 4, 8, 16, 32, 64}) {
    const auto p = simulate(model, cluster, strategy(dp, 1, 1, 4, 16LL * dp)).prediction;
    EXPECT_GE(p.breakdown_s.dp_comm, prev) << "dp " << dp;
    if (dp == 2) first = p.breakdown_s.dp_comm;
    prev = p.breakdown_s.dp_comm;
  }
  EXPECT_GT(prev, first);  // 64 ranks across 8 nodes vs 2 ranks on NVSwitch
}

TEST_F(SimulatorOnGpt2, MemoryDoesNotGrowWithZero) {
  for (int dp : {2, 8}) {
    Strategy s = strategy(dp, 8 / dp, 1, 1, 64);
    if (model.heads % s.tp != 0) continue;
    const auto z0 = simulate(model, cluster, s).prediction;
    s.zero = 1;
    const auto z1 = simulate(model, cluster, s).prediction;
    EXPECT_LT(z1.peak_memory_gib, z0.peak_memory_gib);
  }
}

TEST_F(SimulatorOnGpt2, FullRecomputeChargesTheReforward) {
  Strategy s = strategy(8, 1, 1, 4, 64);
  const auto none = simulate(model, cluster, s).prediction;
  s.recompute = Recompute::Full;
  const auto full = simulate(model, cluster, s).prediction;
  s.recompute = Recompute::Selective;
  const auto sel = simulate(model, cluster, s).prediction;
  EXPECT_GT(full.iteration_s, sel.iteration_s);
  EXPECT_GT(sel.iteration_s, none.iteration_s);
  // A causal flash kernel executes half of attention's s x s FLOPs, which MFU's count holds
  // in full: by hand (Korthikanti et al. 2022, Eq. 7 per token: 72 l h^2 (1 + s/6h + V/12hl)),
  // attention is s/6h of that, so executed / model = 1 - 0.5 (s/6h) / (1 + s/6h + V/12hl).
  const double h = 768, l = 12, seq = 1024, vocab = 50257;
  const double attn = seq / (6 * h), head = vocab / (12 * h * l);
  EXPECT_NEAR(none.hardware_tflops_per_gpu / none.model_tflops_per_gpu, 1 - 0.5 * attn / (1 + attn + head), 2e-3);
  // Full recompute adds one forward (a third of the model FLOPs), its attention at the causal half too.
  EXPECT_NEAR(full.hardware_tflops_per_gpu / full.model_tflops_per_gpu,
              (1 + 1.0 / 3) * (1 - 0.5 * attn / (1 + attn + head)) - head / (1 + attn + head) / 3, 2e-3);
  {
    // An unfused attention computes the whole matrix: executed = model FLOPs without recompute.
    const auto unfused = costmodel::load_software_stack("megatron-2022");
    Strategy u = s;
    u.recompute = Recompute::None;
    const auto p = under(unfused, u);
    EXPECT_NEAR(p.hardware_tflops_per_gpu, p.model_tflops_per_gpu, 1e-9);
  }
  EXPECT_LT(full.peak_memory_gib, none.peak_memory_gib);
  // The default stack's fused attention keeps no scores: selective recompute saves no memory
  // there, but it does under an unfused attention (megatron-2022), which keeps 5as^2b.
  EXPECT_DOUBLE_EQ(sel.peak_memory_gib, none.peak_memory_gib);
  {
    const auto unfused = costmodel::load_software_stack("megatron-2022");
    SimulateOptions o;
    o.stack = &unfused;
    Strategy u = s;
    u.recompute = Recompute::None;
    const auto un_none = simulate(model, cluster, u, o).prediction;
    u.recompute = Recompute::Selective;
    const auto un_sel = simulate(model, cluster, u, o).prediction;
    EXPECT_LT(un_sel.peak_memory_gib, un_none.peak_memory_gib);
    EXPECT_GT(un_none.peak_memory_gib, none.peak_memory_gib);  // the s^2 scores
  }
  // Model FLOPs per iteration do not depend on recompute.
  EXPECT_NEAR(none.model_tflops_per_gpu * none.iteration_s,
              full.model_tflops_per_gpu * full.iteration_s, 1e-9 * none.model_tflops_per_gpu);
}

// A measured block replaces its ops' compute: doubling every block row adds exactly
// layers x micro-batches x (fwd + bwd) to the compute, and rows of another shape change nothing.
TEST_F(SimulatorOnGpt2, MeasuredBlockTimesReplaceTheBlocksCompute) {
  const Strategy s = strategy(8, 1, 1, 2, 64);  // 4 micro-batches per rank, one stage
  const auto base = simulate(model, cluster, s).prediction;
  const std::string sig = costmodel::block_signature(model);
  auto with_rows = [&](const std::string& signature, double fwd_us, double bwd_us) {
    auto c = cluster;
    c.device.block_table = {{signature, 1, false, 2, fwd_us, bwd_us, 0, 0}};
    return simulate(model, c, s).prediction;
  };
  const auto one = with_rows(sig, 1000, 2000);
  const auto two = with_rows(sig, 2000, 4000);
  const double expected = 12.0 * 4 * 3000e-6;
  EXPECT_NEAR(two.breakdown_s.compute - one.breakdown_s.compute, expected, 1e-9);
  EXPECT_GT(one.breakdown_s.compute, expected);  // plus the embedding, head and loss
  EXPECT_EQ(with_rows("hidden 1, heads 1", 1000, 2000).iteration_s, base.iteration_s);
  // A gpt2-124m block at micro-batch 2 is ~0.1 TFLOP forward + backward (3 x 2 x 7.1M
  // parameters x 2048 tokens, plus attention): in 3 us that is ~30 PFLOP/s, 100x an
  // A100's 312 TFLOP/s peak. Such a row is broken, not fast: refused by name.
  try {
    with_rows(sig, 1, 2);
    ADD_FAILURE() << "a block row faster than the device's peak was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("above the device's"), std::string::npos) << e.what();
  }
  auto c = cluster;
  c.device.block_table = {{sig, 1, false, 2, 1000, 2000, 0, 0}};
  EXPECT_TRUE(has_note(simulate(model, c, s).prediction, "measured block_table"));
}

// A profile's fitted training losses are named in the notes with their values and statuses;
// a profile without them adds no such note.
TEST_F(SimulatorOnGpt2, NotesNameTheTrainingLossesAProfileApplies) {
  const Strategy s = strategy(8, 1, 1, 2, 64);
  auto losses_note = [&](const costmodel::ClusterSpec& c) {
    for (const auto& n : simulate(model, c, s).prediction.notes)
      if (n.find("training losses applied") != std::string::npos) return n;
    return std::string();
  };
  EXPECT_EQ(losses_note(cluster), "");
  auto c = cluster;
  c.device.training_losses.present = true;
  c.device.training_losses.value[0] = 0.85;
  c.device.training_losses.status[0] = "fitted";
  c.device.training_losses.value[6] = 0.7;
  c.device.training_losses.status[6] = "at_bound";
  const std::string n = losses_note(c);
  EXPECT_NE(n.find("gemm_sustain 0.85 (fitted)"), std::string::npos) << n;
  EXPECT_NE(n.find("memory_sustain 0.7 (at_bound)"), std::string::npos) << n;
  EXPECT_EQ(n.find("jitter_cv"), std::string::npos) << n;  // neutral: charges nothing, not listed
}

// Rows measured with a real TP group give the block's TP communication (with-group minus
// compute) for groups inside one node; a group across nodes keeps the collective model.
TEST_F(SimulatorOnGpt2, BlockRowsWithARealTpGroupGiveTheBlocksTpCommunication) {
  const std::string sig = costmodel::block_signature(model);
  auto tp_comm = [&](costmodel::ClusterSpec c, double extra_us) {
    c.device.block_table = {{sig, 2, false, 2, 1000, 2000, 1000 + extra_us, 2000 + extra_us}};
    return simulate(model, c, strategy(4, 2, 1, 2, 64)).prediction.breakdown_s.tp_comm;
  };
  // 8 micro-batches per rank, 12 blocks, extra in forward and backward.
  EXPECT_NEAR(tp_comm(cluster, 200) - tp_comm(cluster, 100), 12.0 * 8 * 200e-6, 1e-9);
  auto spread = cluster;
  spread.gpus_per_node = 1;
  spread.nodes = 8;
  EXPECT_EQ(tp_comm(spread, 200), tp_comm(spread, 100));
  EXPECT_GT(tp_comm(spread, 100), 0.0);
}

TEST_F(SimulatorOnGpt2, ThroughputFiguresAreConsistent) {
  const Strategy s = strategy(2, 2, 2, 2, 32);
  const auto p = simulate(model, cluster, s).prediction;
  EXPECT_NEAR(p.tokens_per_s * p.iteration_s, 32.0 * model.seq_len, 1e-6);
  EXPECT_NEAR(p.mfu, p.model_tflops_per_gpu / 312.0, 1e-9);  // A100 bf16 dense peak
  EXPECT_GT(p.mfu, 0.0);
  EXPECT_LT(p.mfu, 1.0);
  EXPECT_TRUE(p.fits_memory);
  EXPECT_EQ(p.stage_memory_gib.size(), 2u);
  EXPECT_DOUBLE_EQ(p.peak_memory_gib,
                   *std::max_element(p.stage_memory_gib.begin(), p.stage_memory_gib.end()));
  EXPECT_FALSE(p.notes.empty());
}

TEST_F(SimulatorOnGpt2, UsesTheGivenStageLayersOrPartitionsItself) {
  Strategy s = strategy(4, 1, 2, 1, 16);
  const auto auto_split = simulate(model, cluster, s);
  ASSERT_EQ(auto_split.stage_layers.size(), 2u);
  SimulateOptions opt;
  opt.stage_layers = {{0, 1}, {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}};  // lopsided
  const auto manual = simulate(model, cluster, s, opt);
  EXPECT_EQ(manual.stage_layers, opt.stage_layers);
  EXPECT_GT(manual.prediction.iteration_s, auto_split.prediction.iteration_s);
  opt.stage_layers = {{0, 1, 2}, {4, 5, 6, 7, 8, 9, 10, 11, 12, 13}};  // group 3 missing
  EXPECT_THROW(simulate(model, cluster, s, opt), InputError);
}

// 12 blocks on pp 14: Megatron-LM runs it with the embedding and the loss on stages of their
// own (--account-for-embedding/loss-in-pipeline-split); strata simulates that split when it is
// given and refuses, by name, to invent one.
TEST_F(SimulatorOnGpt2, EmbeddingAndLossStagesOfTheirOwnRunWhenGiven) {
  Strategy s = strategy(1, 1, 14, 1, 16);
  SimulateOptions opt;
  for (int g = 0; g <= 13; ++g) opt.stage_layers.push_back({g});
  const auto r = simulate(model, cluster, s, opt);
  EXPECT_EQ(r.stage_layers, opt.stage_layers);
  EXPECT_TRUE(std::isfinite(r.prediction.iteration_s));
  EXPECT_GT(r.prediction.iteration_s, 0);
  EXPECT_EQ(r.prediction.stage_memory_gib.size(), 14u);
  const std::string why = strata::testing::input_error_of([&] { simulate(model, cluster, s); });
  EXPECT_NE(why.find("stages of their own, which strata does not choose itself"), std::string::npos) << why;
}

TEST_F(SimulatorOnGpt2, RejectsInvalidStrategies) {
  EXPECT_THROW(simulate(model, cluster, strategy(1, 5, 1, 1, 8)), InputError);     // 12 % 5
  EXPECT_THROW(simulate(model, cluster, strategy(3, 1, 1, 2, 8)), InputError);     // 8 % 6
  EXPECT_THROW(simulate(model, cluster, strategy(1, 1, 13, 1, 8)), InputError);    // pp > L
  EXPECT_THROW(simulate(model, cluster, strategy(4096, 1, 1, 1, 4096)), InputError);  // > cluster
  // A pipeline too long to simulate is an input error, not an out-of-memory crash.
  EXPECT_THROW(simulate(model, cluster, strategy(1, 1, 4, 1, 1'000'000'000'000LL)), InputError);
}

TEST_F(SimulatorOnGpt2, TraceIsValidJsonWithEventsOnEveryStage) {
  Strategy s = strategy(1, 2, 4, 1, 8);
  s.vpp = 3;
  s.schedule = ScheduleKind::Interleaved;
  SimulateOptions opt;
  opt.timeline = true;
  const auto r = simulate(model, cluster, s, opt);
  const auto doc = strata::parse_json(chrome_trace_json(r, "gpt2 test"));
  ASSERT_TRUE(doc.contains("traceEvents"));
  std::set<int> stages_with_compute;
  std::set<int> named;
  int complete = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") named.insert(e["pid"].get<int>());
    if (e["ph"] != "X") continue;
    ++complete;
    EXPECT_TRUE(e["ts"].is_number());
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    if (e["cat"] == "compute") stages_with_compute.insert(e["pid"].get<int>());
  }
  EXPECT_EQ(stages_with_compute, (std::set<int>{0, 1, 2, 3}));
  EXPECT_EQ(named, (std::set<int>{0, 1, 2, 3}));
  // 2 * m * vpp compute steps per stage, plus sends, the optimizer and gradient buckets.
  EXPECT_GT(complete, 4 * 2 * 8 * 3);
}

// A stack that reduces gradients after the backward (megatron-2021's local DDP, fp16
// gradients) exposes the whole all-reduce; one that overlaps buckets hides most of it, and
// pays for what it hides with the SMs NCCL's kernels hold beside the backward.
TEST_F(SimulatorOnGpt2, StackWithoutGradOverlapExposesTheWholeReduction) {
  const Strategy s = strategy(8, 1, 1, 4, 64);
  const auto m21 = costmodel::load_software_stack("megatron-2021");
  const auto p = under(m21, s);
  EXPECT_NEAR(p.breakdown_s.dp_comm, dp8_s(costmodel::Collective::AllReduce, params(), 2), 1e-9);
  auto overlapped = m21;
  overlapped.overlap_grad_reduce = true;
  overlapped.grad_bucket_params = 1'000'000;
  // Exposure alone: a node whose collectives hold no SMs.
  auto no_sms = cluster;
  no_sms.intra_node.comm_sms = 0;
  SimulateOptions o;
  o.stack = &overlapped;
  const auto q = simulate(model, no_sms, s, o).prediction;
  EXPECT_LT(q.breakdown_s.dp_comm, 0.5 * p.breakdown_s.dp_comm);
  EXPECT_LT(q.iteration_s, p.iteration_s);
  // dgx-a100's NVLink collectives hold 24 of the 108 SMs: the 124 bucket all-reduces the
  // backward hides now slow it.
  ASSERT_EQ(cluster.intra_node.comm_sms, 24);
  EXPECT_GT(under(overlapped, s).iteration_s, q.iteration_s);
  EXPECT_EQ(p.stack, "megatron-2021");
}

// DeepSpeed's bf16 optimizer (bigscience-2022-bf16) keeps an fp32 gradient buffer, all-reduces it
// whole in bf16 after the backward, then all-gathers the bf16 weights after its ZeRO-1 step: dp
// comm is exactly those two collectives, and the memory counts 4-byte gradients.
TEST_F(SimulatorOnGpt2, Bf16OptimizerAllReducesTheWholeBufferInBf16) {
  Strategy s = strategy(8, 1, 1, 4, 64);
  s.zero = 1;
  const auto bs = costmodel::load_software_stack("bigscience-2022-bf16");
  const auto p = under(bs, s);
  const double gather = dp8_s(costmodel::Collective::AllGather, params(), 2);
  EXPECT_NEAR(p.breakdown_s.dp_comm, dp8_s(costmodel::Collective::AllReduce, params(), 2) + gather, 1e-9);
  EXPECT_NEAR(p.peak_memory.grads, params() * 4 / (1024.0 * 1024.0 * 1024.0), 1e-6);
  // The same stack reduce-scattering its gradients sends half the bytes.
  auto rs = bs;
  rs.zero1_grad_all_reduce = false;
  EXPECT_NEAR(under(rs, s).breakdown_s.dp_comm, dp8_s(costmodel::Collective::ReduceScatter, params(), 2) + gather,
              1e-9);
}

// Blocking pipeline sends (megatron-2021) keep the sending stage busy for the transfer:
// never faster than asynchronous sends, and its transfers are reported as pp_comm.
TEST_F(SimulatorOnGpt2, BlockingSendsAreChargedToTheSender) {
  Strategy s = strategy(1, 1, 4, 1, 8);
  auto blocking = costmodel::load_software_stack("megatron-2021");
  auto async = blocking;
  async.p2p = costmodel::P2pMode::Async;
  SimulateOptions o;
  o.stack = &blocking;
  const auto b = simulate(model, cluster, s, o).prediction;
  o.stack = &async;
  const auto a = simulate(model, cluster, s, o).prediction;
  EXPECT_GE(b.iteration_s, a.iteration_s);
  EXPECT_GT(b.breakdown_s.pp_comm, 0.0);
  EXPECT_NEAR(breakdown_sum(b.breakdown_s), b.iteration_s, 1e-9 * b.iteration_s);
}


// Megatron's async column-parallel backward: with GEMMs far slower than the collective, the
// input-gradient all-reduce hides entirely behind the wgrad GEMM, so exactly the backward
// all-reduces leave the TP time: per micro-batch, 2 per layer (QKV and MLP inputs) and one
// for the LM head, each of b*s*h 2-byte activations on the TP group.
TEST_F(SimulatorOnGpt2, AsyncTpBackwardHidesTheInputGradientAllReduce) {
  costmodel::ClusterSpec slow = cluster;
  slow.device.gemm_table.clear();
  slow.device.peak_tflops[costmodel::DType::Bf16] = 1;  // GEMMs take far longer than any collective
  auto sync = costmodel::load_software_stack("megatron-2022");
  sync.overlap_tp_backward = false;
  auto async = sync;
  async.overlap_tp_backward = true;
  const Strategy s = strategy(1, 2, 1, 1, 4);  // tp 2, 4 micro-batches of 1 sequence
  SimulateOptions o;
  o.stack = &sync;
  const auto a = simulate(model, slow, s, o).prediction;
  o.stack = &async;
  const auto b = simulate(model, slow, s, o).prediction;
  const costmodel::CollectiveCost coll(slow);
  const double bytes = 1.0 * model.seq_len * model.hidden * 2;
  const double ar = coll.time_s(costmodel::Collective::AllReduce, bytes, costmodel::PlacedGroup{2, 1, 2});
  EXPECT_NEAR(a.breakdown_s.tp_comm - b.breakdown_s.tp_comm, 4 * (2 * model.layers + 1) * ar,
              1e-9 * a.breakdown_s.tp_comm);
}

// Without fused gradient accumulation every weight pays an add pass per micro-batch: read
// the running gradient and the new one, write the sum (3 x params x 2 bytes), plus a kernel.
TEST_F(SimulatorOnGpt2, UnfusedGradientAccumulationAddsAPassPerWeight) {
  auto fused = costmodel::load_software_stack("megatron-2022");
  auto unfused = fused;
  unfused.fused_grad_accumulation = false;
  const Strategy s = strategy(1, 1, 1, 1, 4);
  const auto a = under(fused, s);
  const auto b = under(unfused, s);
  const auto graph = models::ModelGraph::build(model, 1);
  const double bw = cluster.device.memory_bandwidth_gbps * 1e9 * cluster.device.memory_efficiency;
  // megatron-2022 keeps fp32 main gradients of bf16 weights. Unfused: an add kernel per
  // weight reads the main gradient (4 B) and the new one (2 B) and writes the sum (4 B).
  // Fused: the wgrad GEMM reads and writes the main gradient (8 B) instead of writing a
  // bf16 gradient (2 B) the GEMM time already has. Norms and embeddings add either way.
  EXPECT_EQ(fused.grad_reduce_dtype, costmodel::DType::Fp32);
  double per_mb = 0;
  for (std::size_t v = 0; v < graph.num_ops(); ++v)
    if (graph.op(v).params > 0 && models::is_gemm(graph.op(v).kind))
      per_mb += (10.0 - 6.0) * graph.op(v).params / bw + cluster.device.kernel_overhead_us * 1e-6;
  EXPECT_GT(per_mb, 0);
  EXPECT_NEAR(b.breakdown_s.compute - a.breakdown_s.compute, 4 * per_mb, 1e-9 * a.iteration_s);
}

// The stack's passes over the gradient buffer, once per iteration: zero fill (4 B per
// fp32 value), NaN-check norm (4 B read), 1/dp scaling (4 B read + 4 B write), and a kernel
// for the fill and per bucket for the other two (megatron-2022 reduces one bucket).
TEST_F(SimulatorOnGpt2, GradientBufferPassesCostByHand) {
  auto none = costmodel::load_software_stack("megatron-2022");
  none.grad_buffer_zero = none.grad_buffer_nan_check = none.grad_buffer_scale = false;
  auto all = none;
  all.grad_buffer_zero = all.grad_buffer_nan_check = all.grad_buffer_scale = true;
  ASSERT_EQ(none.grad_bucket_params, 0);
  const Strategy s = strategy(2, 1, 1, 1, 4);
  const auto a = under(none, s);
  const auto b = under(all, s);
  const double bw = cluster.device.memory_bandwidth_gbps * 1e9 * cluster.device.memory_efficiency;
  const double params = models::ModelGraph::build(model, 1).total_params();
  const double want = (4.0 + 4.0 + 8.0) * params / bw + 3 * cluster.device.kernel_overhead_us * 1e-6;
  EXPECT_NEAR(b.breakdown_s.optimizer - a.breakdown_s.optimizer, want, 1e-9 * a.iteration_s);
  EXPECT_NEAR(b.iteration_s - a.iteration_s, want, 1e-9 * a.iteration_s);
}

// ---- Context parallel -------------------------------------------------------------

// A cluster where every op is a pure FLOP count at a fixed rate: no GEMM table (roofline,
// linear in the tokens), free memory traffic and communication, no kernel overheads.
TEST_F(SimulatorOnGpt2, ZeroThreeGathersEveryGroupTwicePerMicroBatch) {
  auto stack = costmodel::load_software_stack("mcore-2024");
  stack.zero_prefetch = false;
  SimulateOptions o;
  o.stack = &stack;
  Strategy s = strategy(8, 1, 1, 4, 64);  // 2 micro-batches of 4
  s.zero = 3;
  const auto p = simulate(model, cluster, s, o).prediction;
  const auto graph = models::ModelGraph::build(model, 4);
  const costmodel::CollectiveCost coll(cluster);
  const costmodel::PlacedGroup dp8{8, 1, 8};
  double gathers = 0, reduces = 0;
  for (const auto& g : graph.groups()) {
    gathers += 2 * coll.time_s(costmodel::Collective::AllGather, g.params * 2, dp8);
    reduces += coll.time_s(costmodel::Collective::ReduceScatter,
                           g.params * costmodel::dtype_bytes(stack.grad_reduce_dtype), dp8);
  }
  const int m = 2;
  EXPECT_GE(p.breakdown_s.dp_comm, m * gathers * (1 - 1e-9));
  EXPECT_LE(p.breakdown_s.dp_comm, m * (gathers + reduces) * (1 + 1e-9));
  EXPECT_NEAR(breakdown_sum(p.breakdown_s), p.iteration_s, 1e-9 * p.iteration_s);
  // Prefetch hides gathers behind compute: never slower.
  stack.zero_prefetch = true;
  const auto q = simulate(model, cluster, s, o).prediction;
  EXPECT_LT(q.breakdown_s.dp_comm, p.breakdown_s.dp_comm);
  // Sharded parameters and gradients: less memory than ZeRO-1 at dp 8 on one stage.
  s.zero = 1;
  const auto z1 = simulate(model, cluster, s, o).prediction;
  EXPECT_LT(q.peak_memory_gib, z1.peak_memory_gib);
  EXPECT_GT(z1.breakdown_s.dp_comm, 0);
}

// DeepSpeed stage 3 gathers module by module: without prefetch every gather waits, so the
// gathers' part of dp_comm is, by hand, one all-gather per weight-holding op of each group
// (twice per micro-batch: forward and backward) plus the host time of each; ops at or below
// the persistence threshold (norms, here) are never gathered.
TEST_F(SimulatorOnGpt2, ModuleByModuleZeroThreeGathersEachWeightAndSkipsPersistedOnes) {
  auto stack = costmodel::load_software_stack("deepspeed-2021-zero3");
  ASSERT_EQ(stack.zero3_gather, costmodel::Zero3Gather::Module);
  ASSERT_FALSE(stack.zero_prefetch);
  stack.precision = costmodel::DType::Bf16;  // the fixture's device peaks
  SimulateOptions o;
  o.stack = &stack;
  Strategy s = strategy(8, 1, 1, 4, 64);  // 2 micro-batches of 4
  s.zero = 3;
  const auto graph = models::ModelGraph::build(model, 4);
  const costmodel::CollectiveCost coll(cluster);
  const costmodel::PlacedGroup dp8{8, 1, 8};
  const double host = stack.zero3_fetch_host_us * 1e-6;
  double gathers = 0, reduces = 0, modules = 0;
  for (const auto& g : graph.groups()) {
    for (const std::size_t v : g.ops) {
      const models::Op& op = graph.op(v);
      if (op.params <= stack.zero3_persist_params) continue;
      gathers += 2 * (coll.time_s(costmodel::Collective::AllGather, op.params * 2, dp8) + host);
      ++modules;
    }
    reduces += coll.time_s(costmodel::Collective::ReduceScatter,
                           g.params * costmodel::dtype_bytes(stack.grad_reduce_dtype), dp8);
  }
  ASSERT_GT(modules, 2.0 * model.layers);  // several weights per block
  const int m = 2;
  const auto p = simulate(model, cluster, s, o).prediction;
  EXPECT_GE(p.breakdown_s.dp_comm, m * gathers * (1 - 1e-9));
  EXPECT_LE(p.breakdown_s.dp_comm, m * (gathers + reduces) * (1 + 1e-9));
  // The same bytes gathered a block at a time pay fewer latencies and no per-module host time.
  auto block = stack;
  block.zero3_gather = costmodel::Zero3Gather::Block;
  block.zero3_persist_params = 0;
  block.zero3_fetch_host_us = 0;
  o.stack = &block;
  const auto q = simulate(model, cluster, s, o).prediction;
  EXPECT_LT(q.breakdown_s.dp_comm, p.breakdown_s.dp_comm);
  // Every module persisted: nothing is gathered, only the reduce-scatters are left.
  auto persisted = stack;
  persisted.zero3_persist_params = 1e11;
  o.stack = &persisted;
  const auto r = simulate(model, cluster, s, o).prediction;
  EXPECT_LE(r.breakdown_s.dp_comm, m * reduces * (1 + 1e-9));
}

// Overlapped DP reductions hold NCCL's SMs (dgx-a100: 16 of 108 across nodes): compute
// beside them slows, so the step grows by a share of the overlapped reduction time and
// never by more than share x the whole reduction; without comm_sms nothing changes.
TEST_F(SimulatorOnGpt2, OverlappedDpReductionSlowsComputeByItsSmShare) {
  const Strategy s = strategy(16, 1, 1, 4, 256);  // dp 16 spans two 8-GPU nodes
  auto stack = costmodel::load_software_stack("megatron-2021");
  stack.overlap_grad_reduce = true;
  stack.grad_bucket_params = 2'000'000;
  SimulateOptions o;
  o.stack = &stack;
  o.timeline = true;
  auto free_sms = cluster;
  free_sms.inter_node.comm_sms = 0;
  const auto base = simulate(model, free_sms, s, o);
  const auto held = simulate(model, cluster, s, o);
  ASSERT_EQ(cluster.inter_node.comm_sms, 16);
  ASSERT_EQ(cluster.device.sm_count, 108);
  const double share = 16.0 / 108.0;
  double reduce_s = 0;
  for (const auto& e : base.timeline)
    if (e.stream == "dp_comm") reduce_s += e.end_s - e.start_s;
  ASSERT_GT(reduce_s, 0);
  const double grown = held.prediction.iteration_s - base.prediction.iteration_s;
  EXPECT_GT(grown, 0.05 * share * reduce_s);
  EXPECT_LE(grown, share * reduce_s * (1 + 1e-9));
  EXPECT_TRUE(has_note(held.prediction, "16 of 108 SMs"));
  // Inside one node NVLink collectives hold NCCL's 24 channels' SMs: charged and said so; a
  // link without comm_sms charges nothing and says that.
  const auto one_node = simulate(model, cluster, strategy(8, 1, 1, 4, 128), o).prediction;
  ASSERT_EQ(cluster.intra_node.comm_sms, 24);
  free_sms.intra_node.comm_sms = 0;
  auto one_node_free = simulate(model, free_sms, strategy(8, 1, 1, 4, 128), o).prediction;
  EXPECT_GT(one_node.iteration_s, one_node_free.iteration_s);
  EXPECT_TRUE(has_note(one_node, "24 of 108 SMs"));
  EXPECT_TRUE(has_note(one_node_free, "SM use is not charged"));
}


// Transformer Engine's userbuffers overlaps (mcore-2024: tp_comm_sms 16 of the H100's 132)
// slow the GEMM beside them while they run. Per layer and micro-batch the charged kernels
// are the two row-parallel reduce-scatters of the forward ("pipeline") and the column-
// parallel all-gather + reduce-scatter pairs of the backward ("bulk"): six collectives of
// t x h x 2 bytes on the TP group. The step grows by at most share x their time, by more
// than nothing, and not at all when the stack charges no SMs or does not overlap.
TEST(Simulator, UserbuffersOverlapSlowsTheGemmBesideItBySmShare) {
  const auto model = models::load_model("megatron-1.7b");
  const auto cluster = strata::testing::tables_only_cluster("dgx-h100");
  auto stack = costmodel::load_software_stack("mcore-2024");
  ASSERT_EQ(stack.tp_comm_sms, 16);
  ASSERT_EQ(cluster.device.sm_count, 132);
  Strategy s = strategy(1, 8, 1, 1, 2);  // one stage, 2 micro-batches of 2048 tokens
  s.sequence_parallel = true;
  SimulateOptions o;
  o.stack = &stack;
  const auto held = simulate(model, cluster, s, o).prediction;
  auto free_stack = stack;
  free_stack.tp_comm_sms = 0;
  o.stack = &free_stack;
  const auto base = simulate(model, cluster, s, o).prediction;
  const costmodel::CollectiveCost coll(cluster);
  const costmodel::PlacedGroup tp8{8, 1, 8};  // one node
  const double bytes = 2048.0 * 2304 * 2;
  const double c = coll.time_s(costmodel::Collective::ReduceScatter, bytes, tp8);
  const double charged = 2 /*micro-batches*/ * 24 /*layers*/ * 6 * c;
  const double grown = held.iteration_s - base.iteration_s;
  EXPECT_GT(grown, 0.1 * 16.0 / 132 * charged);
  EXPECT_LE(grown, 16.0 / 132 * charged * (1 + 1e-6));
  // Without userbuffers overlap the SM setting changes nothing.
  stack.overlap_tp_comm = false;
  free_stack.overlap_tp_comm = false;
  o.stack = &stack;
  const double a = simulate(model, cluster, s, o).prediction.iteration_s;
  o.stack = &free_stack;
  EXPECT_DOUBLE_EQ(a, simulate(model, cluster, s, o).prediction.iteration_s);
}

}  // namespace
}  // namespace strata::planner

namespace strata::planner {
namespace {

// `strata simulate --ops`: the rows are what the simulator charged. On one GPU without
// recompute the compute of an iteration is micro-batches x (embedding + blocks + head),
// and every block costs what the first one does.
TEST_F(SimulatorOnGpt2, OpCostRowsAddUpToTheComputeOfTheIteration) {
  Strategy s;
  s.micro_batch = 2;
  s.global_batch = 8;
  SimulateOptions o;
  o.op_costs = true;
  const SimulationResult r = simulate(model, cluster, s, o);
  ASSERT_FALSE(r.ops.empty());
  double block = 0, head = 0;
  for (const auto& op : r.ops) {
    EXPECT_GT(op.fwd_s, 0) << op.name;
    EXPECT_GT(op.bwd_s, 0) << op.name;
    EXPECT_TRUE(op.flops > 0 || op.bytes_fwd > 0 || op.kind == "loss") << op.name;
    (op.group == 1 ? block : head) += op.fwd_s + op.bwd_s;
  }
  EXPECT_EQ(r.ops.front().group, 1);
  EXPECT_EQ(r.ops.back().group, static_cast<int>(model.layers) + 1);
  const double per_mb = r.prediction.breakdown_s.compute / 4;
  const double counted = static_cast<double>(model.layers) * block + head;
  EXPECT_GE(per_mb, counted * (1 - 1e-9));
  EXPECT_LE(per_mb, counted * 1.02);  // the embedding group is not in the rows
  // Without the option nothing is recorded (the search never pays for it).
  EXPECT_TRUE(simulate(model, cluster, s).ops.empty());
}

// A FlashAttention-1 stack on a device without that kernel's rate is timed at FlashAttention-2's
// and says so; with a rate (the A100's attention_flash1) it says nothing and attention runs slower.
TEST(Simulator, Flash1WithoutTheDevicesRateWarnsAndWithItRunsAtIt) {
  auto model = models::load_model("gpt2-124m");
  const auto foundry = costmodel::load_software_stack("llm-foundry-2023");
  SimulateOptions o;
  o.stack = &foundry;
  Strategy s;
  s.dp = 8;
  s.micro_batch = 4;
  s.global_batch = 64;
  s.zero = 3;
  const auto warned = [](const Prediction& p) { return has_note(p, "attention.kernel flash1"); };
  auto a100 = strata::testing::tables_only_cluster("dgx-a100");
  ASSERT_GT(a100.device.attention_flash1_efficiency, 0);
  const auto with_rate = simulate(model, a100, s, o).prediction;
  EXPECT_FALSE(warned(with_rate));
  a100.device.attention_flash1_efficiency = 0;
  const auto without = simulate(model, a100, s, o).prediction;
  EXPECT_TRUE(warned(without));
  EXPECT_LT(without.iteration_s, with_rate.iteration_s);
}

// ZeRO-3's gathers and reduce-scatters run beside the compute that hides them whatever the
// stack's DP-bucket flags say: the notes name their SM share too.
TEST_F(SimulatorOnGpt2, ZeroTrafficSmShareIsNamedInTheNotes) {
  Strategy s = strategy(8, 1, 1, 4, 128);
  s.zero = 3;
  auto stack = costmodel::load_software_stack("megatron-2021");
  stack.overlap_grad_reduce = false;
  stack.overlap_param_gather = false;
  stack.supports.max_zero = 3;
  SimulateOptions o;
  o.stack = &stack;
  const auto p = simulate(model, cluster, s, o).prediction;
  EXPECT_TRUE(has_note(p, "overlapped DP and ZeRO collectives hold 24 of 108 SMs"));
}

}  // namespace
}  // namespace strata::planner

