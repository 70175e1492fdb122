// Parity of `strata train` under mpirun: every parallel layout with dp * tp * pp * cp <= 4
// trains the tiny GPT (and the tiny Llama) to the same per-step losses as one rank
// (relative difference <= 1e-5 over 10 steps), with the same global gradient norm and
// the same per-parameter gradient norms at the first step. The per-parameter norms catch
// what a loss curve under Adam cannot: a gradient scaled by a missing or doubled
// all-reduce (Adam's update is nearly invariant to a gradient's scale).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>

#include "tests/integration/runtime_mpi_util.h"
#include "common/json_text.h"

namespace strata::testing {
namespace {

using planner::Recompute;
using planner::ScheduleKind;

constexpr int kSteps = 10;

// The one-rank reference of a model. ctest runs each test in its own process, so the
// reference run is kept in a folder named after the strata binary's size and mtime (the
// same binary and arguments always give the same run) and reused by later tests.
const TrainRun& reference(const std::string& model) {
  static std::map<std::string, TrainRun> runs;
  auto it = runs.find(model);
  if (it != runs.end()) return it->second;
  Layout l;
  l.name = "reference-" + model;
  l.model = model;
  l.micro_batch = 2;
  const auto stamp = fs::last_write_time(STRATA_EXE).time_since_epoch().count();
  const fs::path cache = fs::temp_directory_path() /
                         ("strata_parity_ref_" + std::to_string(fs::file_size(STRATA_EXE)) + "_" +
                          std::to_string(stamp) + "_" + model);
  const fs::path metrics = cache / (l.name + ".jsonl"), norms = cache / (l.name + ".norms.json");
  TrainRun run;
  if (fs::exists(metrics) && fs::exists(norms)) {
    run.result.exit_code = 0;
    run.steps = read_metrics(metrics.string());
    run.grad_norms = strata::parse_json(read_all(norms.string()));
  }
  if (run.steps.size() != static_cast<std::size_t>(kSteps)) {
    const TempDir dir("parity_ref_" + model);
    run = train(l, dir, kSteps);
    if (run.result.exit_code == 0) {  // publish atomically: copy, then rename the folder
      const fs::path tmp = cache.string() + ".tmp" + std::to_string(::getpid());
      fs::create_directories(tmp);
      fs::copy_file(dir / (l.name + ".jsonl"), tmp / (l.name + ".jsonl"));
      fs::copy_file(dir / (l.name + ".norms.json"), tmp / (l.name + ".norms.json"));
      std::error_code ec;
      fs::rename(tmp, cache, ec);
      if (ec) fs::remove_all(tmp);
    }
  }
  return runs.emplace(model, std::move(run)).first->second;
}

// Data-parallel layouts reduce in buckets of this many parameters: the default bucket
// holds a whole tiny model, so the reduction would never overlap the backward pass.
const std::vector<std::string> kSmallBuckets = {"--grad-bucket-params", "20000"};

// Per-parameter gradient norms of the first step, as the one-rank reference's.
void expect_same_param_grad_norms(const std::string& name, const nlohmann::json& reference_norms,
                                  const nlohmann::json& run_norms) {
  const auto& want = reference_norms.at("params");
  const auto& got = run_norms.at("params");
  EXPECT_EQ(got.size(), want.size()) << name;
  for (const auto& [param, norm] : want.items()) {
    ASSERT_TRUE(got.contains(param)) << name << " lacks " << param;
    const double w = norm.get<double>(), g = got.at(param).get<double>();
    EXPECT_LE(std::abs(g - w), 1e-4 * w + 1e-8) << name << " " << param << ": " << g << " vs " << w;
  }
}

// A model variant's YAML in `dir`, for `train` to read by path; returns the path.
std::string write_model(const models::ModelSpec& m, const TempDir& dir) {
  const std::string model = (dir / (m.name + ".yaml")).string();
  std::ofstream out(model);
  out << models::to_yaml(m);
  return model;
}

// A model variant's run on several ranks (`run`, named `name`) against its own one-rank run
// (`one`), step by step and in the first step's per-parameter gradient norms: for variants
// the cached reference() does not hold. `max_diff` is the largest relative loss difference.
void expect_same_run(const std::string& name, const TrainRun& one, const TrainRun& run, double& max_diff) {
  ASSERT_EQ(one.result.exit_code, 0) << one.result.err << one.result.out;
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err << run.result.out;
  ASSERT_EQ(one.steps.size(), static_cast<std::size_t>(kSteps));
  ASSERT_EQ(run.steps.size(), static_cast<std::size_t>(kSteps));
  for (std::size_t i = 0; i < one.steps.size(); ++i) {
    const auto &a = run.steps[i], &b = one.steps[i];
    max_diff = std::max(max_diff, std::abs(a.loss - b.loss) / std::abs(b.loss));
    EXPECT_LE(std::abs(a.loss - b.loss), 1e-5 * std::abs(b.loss)) << "step " << a.step;
    EXPECT_LE(std::abs(a.grad_norm - b.grad_norm), 1e-4 * b.grad_norm) << "step " << a.step;
  }
  expect_same_param_grad_norms(name, one.grad_norms, run.grad_norms);
}

// The parity fixture: train layout `l` (with `extra` flags) for kSteps and compare it
// step by step with the one-rank reference. Each test below is one layout.
void expect_parity(const Layout& l, std::vector<std::string> extra = {}) {
  const TrainRun& ref = reference(l.model);
  ASSERT_EQ(ref.result.exit_code, 0) << ref.result.err;
  ASSERT_EQ(ref.steps.size(), static_cast<std::size_t>(kSteps));
  const TempDir dir("parity_" + l.name);
  if (l.dp > 1 && std::find(extra.begin(), extra.end(), kSmallBuckets[0]) == extra.end())
    extra.insert(extra.end(), kSmallBuckets.begin(), kSmallBuckets.end());
  const TrainRun run = train(l, dir, kSteps, extra);
  ASSERT_FALSE(run.result.timed_out) << l.name;
  ASSERT_EQ(run.result.exit_code, 0) << l.name << "\n" << run.result.err << run.result.out;
  ASSERT_EQ(run.steps.size(), static_cast<std::size_t>(kSteps)) << l.name;
  double max_loss_diff = 0, max_norm_diff = 0;
  for (int i = 0; i < kSteps; ++i) {
    const auto& a = run.steps[static_cast<std::size_t>(i)];
    const auto& b = ref.steps[static_cast<std::size_t>(i)];
    max_loss_diff = std::max(max_loss_diff, std::abs(a.loss - b.loss) / std::abs(b.loss));
    max_norm_diff = std::max(max_norm_diff, std::abs(a.grad_norm - b.grad_norm) / b.grad_norm);
    EXPECT_EQ(a.step, b.step);
    EXPECT_LE(std::abs(a.loss - b.loss), 1e-5 * std::abs(b.loss))
        << l.name << " step " << a.step << ": loss " << a.loss << " vs one rank " << b.loss;
    EXPECT_LE(std::abs(a.grad_norm - b.grad_norm), 1e-4 * b.grad_norm)
        << l.name << " step " << a.step << ": grad norm " << a.grad_norm << " vs " << b.grad_norm;
  }
  std::printf("[ parity   ] %-26s %d ranks: max relative loss diff %.1e, grad-norm diff %.1e, "
              "loss %.6f -> %.6f\n",
              l.name.c_str(), l.ranks(), max_loss_diff, max_norm_diff, run.steps.front().loss,
              run.steps.back().loss);
  if (l.dp > 1) {  // the reduction ran in the buckets asked for
    std::smatch m;
    ASSERT_TRUE(std::regex_search(run.result.out, m, std::regex(R"(dp(?: x cp)? gradient reduction: (\d+) )")))
        << run.result.out;
    const bool small = std::search(extra.begin(), extra.end(), kSmallBuckets.begin(), kSmallBuckets.end()) != extra.end();
    if (small) { EXPECT_GE(std::stoi(m[1].str()), 3) << l.name; }
  }
  expect_same_param_grad_norms(l.name, ref.grad_norms, run.grad_norms);
  // and training actually learns
  EXPECT_LT(run.steps.back().loss, run.steps.front().loss) << l.name;
}

TEST(RuntimeParity, DataParallel2) { expect_parity({.name = "dp2", .dp = 2}); }

TEST(RuntimeParity, DataParallel2ReducedAfterTheBackwardPass) {
  expect_parity({.name = "dp2_no_overlap", .dp = 2}, {"--no-overlap-grad-reduce"});
}

TEST(RuntimeParity, DataParallel2OneBucket) {
  expect_parity({.name = "dp2_one_bucket", .dp = 2}, {"--grad-bucket-params", "100000000"});
}

TEST(RuntimeParity, TensorParallel2) { expect_parity({.name = "tp2", .tp = 2}); }

TEST(RuntimeParity, TensorParallel2SequenceParallel) {
  expect_parity({.name = "tp2_sp", .tp = 2, .sequence_parallel = true});
}

TEST(RuntimeParity, TensorParallel4) {  // vocabulary padded to 512: ranks 2 and 3 hold no real rows
  expect_parity({.name = "tp4", .tp = 4});
}

TEST(RuntimeParity, PipelineParallel2OneFOneB) { expect_parity({.name = "pp2", .pp = 2}); }

TEST(RuntimeParity, PipelineParallel2GPipe) {
  expect_parity({.name = "pp2_gpipe", .pp = 2, .schedule = ScheduleKind::GPipe});
}

TEST(RuntimeParity, PipelineParallel2UnevenStages) {
  expect_parity({.name = "pp2_uneven", .pp = 2, .stage_layers = {{0, 1}, {2, 3, 4, 5}}});
}

TEST(RuntimeParity, PipelineParallel4) { expect_parity({.name = "pp4", .pp = 4}); }

TEST(RuntimeParity, InterleavedVpp2) {
  expect_parity({.name = "pp2_vpp2", .pp = 2, .vpp = 2, .schedule = ScheduleKind::Interleaved});
}

TEST(RuntimeParity, TensorAndPipelineParallel) { expect_parity({.name = "tp2_pp2", .tp = 2, .pp = 2}); }

TEST(RuntimeParity, DataAndTensorParallel) { expect_parity({.name = "dp2_tp2", .dp = 2, .tp = 2}); }

TEST(RuntimeParity, DataAndPipelineParallel) { expect_parity({.name = "dp2_pp2", .dp = 2, .pp = 2}); }

TEST(RuntimeParity, DataAndPipelineParallelPipelineOuterRankOrder) {
  expect_parity({.name = "dp2_pp2_order", .dp = 2, .pp = 2, .rank_order = "pp-dp-tp"});
}

TEST(RuntimeParity, Zero1DataParallel2) { expect_parity({.name = "zero1_dp2", .dp = 2, .zero = 1}); }

TEST(RuntimeParity, Zero1DataParallel2PipelineParallel2) {
  expect_parity({.name = "zero1_dp2_pp2", .dp = 2, .pp = 2, .zero = 1});
}

TEST(RuntimeParity, Zero1DataParallel2TensorParallel2SequenceParallel) {
  expect_parity({.name = "zero1_dp2_tp2_sp", .dp = 2, .tp = 2, .zero = 1, .sequence_parallel = true});
}

TEST(RuntimeParity, RecomputeSelectiveTensorParallel) {
  expect_parity(
      {.name = "selective_tp2_sp", .tp = 2, .recompute = Recompute::Selective, .sequence_parallel = true});
}

TEST(RuntimeParity, RecomputeFullPipelineParallel) {
  expect_parity({.name = "full_pp2_tp2", .tp = 2, .pp = 2, .recompute = Recompute::Full});
}

TEST(RuntimeParity, RecomputeModesOnOneRank) {
  for (auto mode : {Recompute::Selective, Recompute::Full}) {
    expect_parity({.name = std::string("one_rank_") + planner::to_string(mode), .recompute = mode});
  }
}

TEST(RuntimeParity, LlamaTensorParallel2) {
  expect_parity({.name = "llama_tp2", .model = "tiny-llama", .tp = 2});
}

TEST(RuntimeParity, LlamaTensorPipelineSequenceParallel) {
  expect_parity(
      {.name = "llama_tp2_pp2_sp", .model = "tiny-llama", .tp = 2, .pp = 2, .sequence_parallel = true});
}

TEST(RuntimeParity, LlamaDataParallelZero1) {
  expect_parity({.name = "llama_dp2_zero1", .model = "tiny-llama", .dp = 2, .zero = 1});
}

// Context parallel (the sequence in 2 x cp load-balanced chunks, K/V passed around the
// ring or all-gathered for attention, gradients summed over dp x cp) and ZeRO-2/3
// (gradients, then parameters, sharded over dp x cp: a rank keeps only its shards, and a
// layer group's full parameters (ZeRO-3) and gradients exist only while it runs).
//
// The six layouts of issue 13 run as resume tests: checkpoint at step 5, a second job
// resumes to step 10, and the ten losses are the one-rank curve (<= 1e-5 relative), the
// first step's per-parameter gradient norms too. One job pair per layout keeps the set short.
void expect_resumed_parity(const Layout& l, std::vector<std::string> extra = {}) {
  const TrainRun& ref = reference(l.model);
  ASSERT_EQ(ref.result.exit_code, 0) << ref.result.err;
  const TempDir dir("resume_parity_" + l.name);
  const std::string plan = write_plan(l, dir), metrics = (dir / "metrics.jsonl").string();
  const std::string ckpt = (dir / "ckpt").string(), norms = (dir / "norms.json").string();
  if (l.dp > 1) extra.insert(extra.end(), kSmallBuckets.begin(), kSmallBuckets.end());
  auto args = [&](std::vector<std::string> more) {
    std::vector<std::string> a = {"train", "--plan", plan, "--metrics", metrics,
                                  "--checkpoint-dir", ckpt, "--log-every", "100"};
    a.insert(a.end(), extra.begin(), extra.end());
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const RunResult first = mpirun_strata(l.ranks(), args({"--steps", "5", "--debug-grad-norms", norms}));
  ASSERT_FALSE(first.timed_out) << l.name;
  ASSERT_EQ(first.exit_code, 0) << l.name << "\n" << first.err << first.out;
  const RunResult second = mpirun_strata(l.ranks(), args({"--steps", "10", "--resume"}));
  ASSERT_FALSE(second.timed_out) << l.name;
  ASSERT_EQ(second.exit_code, 0) << l.name << "\n" << second.err << second.out;
  EXPECT_NE(second.out.find("resumed from"), std::string::npos) << second.out;
  const auto steps = read_metrics(metrics);
  ASSERT_EQ(steps.size(), static_cast<std::size_t>(kSteps)) << l.name;
  double max_diff = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto& a = steps[i];
    const auto& b = ref.steps[i];
    EXPECT_EQ(a.step, b.step);
    max_diff = std::max(max_diff, std::abs(a.loss - b.loss) / std::abs(b.loss));
    EXPECT_LE(std::abs(a.loss - b.loss), 1e-5 * std::abs(b.loss))
        << l.name << " step " << a.step << ": loss " << a.loss << " vs one rank " << b.loss;
    EXPECT_LE(std::abs(a.grad_norm - b.grad_norm), 1e-4 * b.grad_norm)
        << l.name << " step " << a.step << ": grad norm " << a.grad_norm << " vs " << b.grad_norm;
  }
  expect_same_param_grad_norms(l.name, ref.grad_norms, strata::parse_json(read_all(norms)));
  std::printf("[ resume   ] %-26s %d ranks: checkpoint at 5, resumed to 10, max relative loss "
              "diff %.1e, loss %.6f -> %.6f\n", l.name.c_str(), l.ranks(), max_diff,
              steps.front().loss, steps.back().loss);
  EXPECT_LT(steps.back().loss, steps.front().loss) << l.name;
}

TEST(RuntimeResumeParity, ContextParallel2) { expect_resumed_parity({.name = "cp2", .cp = 2}); }

TEST(RuntimeResumeParity, ContextParallel2TensorParallel2) {
  expect_resumed_parity({.name = "cp2_tp2_sp", .tp = 2, .cp = 2, .sequence_parallel = true});
}

TEST(RuntimeResumeParity, ContextParallel2PipelineParallel2) {
  expect_resumed_parity({.name = "cp2_pp2", .pp = 2, .cp = 2});
}

TEST(RuntimeResumeParity, Zero2DataParallel2) {
  expect_resumed_parity({.name = "zero2_dp2", .dp = 2, .zero = 2});
}

TEST(RuntimeResumeParity, Zero3DataParallel2) {
  expect_resumed_parity({.name = "zero3_dp2", .dp = 2, .zero = 3});
}

TEST(RuntimeResumeParity, Zero3DataParallel2TensorParallel2) {
  expect_resumed_parity({.name = "zero3_dp2_tp2", .dp = 2, .tp = 2, .zero = 3});
}

// More combinations, one job each.
TEST(RuntimeParity, ContextParallel2AllGather) {
  expect_parity({.name = "cp2_all_gather", .cp = 2}, {"--cp-kv-exchange", "all-gather"});
}

TEST(RuntimeParity, ContextParallel2Llama) {  // RoPE positions follow the chunk layout
  expect_parity({.name = "llama_cp2", .model = "tiny-llama", .cp = 2});
}

TEST(RuntimeParity, LlamaContextParallel2PipelineParallel2FullRecompute) {
  // ring attention re-run (with its K/V shifts) inside each block's backward
  expect_parity({.name = "llama_cp2_pp2_full", .model = "tiny-llama", .pp = 2, .cp = 2,
                 .recompute = Recompute::Full});
}

TEST(RuntimeParity, ContextParallel2DataParallel2Zero1AllGather) {
  expect_parity({.name = "cp2_dp2_zero1", .dp = 2, .cp = 2, .zero = 1},
                {"--cp-kv-exchange", "all-gather"});
}

TEST(RuntimeParity, Zero3DataParallel2PipelineParallel2FullRecompute) {
  // the tied embedding sharded on both end stages; full recompute re-runs each block's
  // forward inside its backward (after that block's backward gather)
  expect_parity({.name = "zero3_dp2_pp2_full", .dp = 2, .pp = 2, .zero = 3,
                 .recompute = Recompute::Full});
}

TEST(RuntimeParity, Zero3ContextParallel2) {
  expect_parity({.name = "zero3_cp2", .cp = 2, .zero = 3});
}

// Four shards cut the blocks at other places (uneven all-gather and reduce-scatter counts,
// ranks holding nothing of a group).
TEST(RuntimeParity, Zero3DataParallel4) { expect_parity({.name = "zero3_dp4", .dp = 4, .zero = 3}); }

TEST(RuntimeParity, Zero3DataParallel2WithoutPrefetch) {
  expect_parity({.name = "zero3_dp2_noprefetch", .dp = 2, .zero = 3}, {"--no-zero-prefetch"});
}

TEST(RuntimeParity, Zero2DataParallel2PipelineParallel2) {
  // the tied embedding's gradient stays whole on both end stages until its two halves
  // are summed, then reduce-scattered; every other group per micro-batch
  expect_parity({.name = "zero2_dp2_pp2", .dp = 2, .pp = 2, .zero = 2});
}

TEST(RuntimeParity, Zero2DataParallel2TensorParallel2SequenceParallel) {
  // sequence-parallel partial gradients summed over TP on the kept shards
  expect_parity({.name = "zero2_dp2_tp2_sp", .dp = 2, .tp = 2, .zero = 2, .sequence_parallel = true});
}

}  // namespace
}  // namespace strata::testing

// Mixture of experts (tiny-moe: a dense block, then three MoE blocks of 4 SwiGLU experts,
// top-2 softmax routing and a shared expert). Routed experts spread over etp x ep ranks
// inside the stage's tp x cp x dp (Megatron-Core folding), tokens exchanged by all-to-all,
// expert gradients summed (and ZeRO-sharded) over edp. Each layout against the one-rank run
// of the same model.
namespace strata::testing {
namespace {

TEST(RuntimeParity, MoeExpertParallel2) { expect_parity({.name = "moe_ep2", .model = "tiny-moe", .dp = 2, .ep = 2}); }

TEST(RuntimeParity, MoeExpertsReplicatedOverDataParallel) {  // ep 1: edp = dp = 2
  expect_parity({.name = "moe_dp2", .model = "tiny-moe", .dp = 2});
}

TEST(RuntimeParity, MoeExpertParallel2TensorParallel2) {  // ep group = tp group, edp = dp
  expect_parity({.name = "moe_ep2_tp2", .model = "tiny-moe", .dp = 2, .tp = 2, .ep = 2,
                 .sequence_parallel = true});
}

TEST(RuntimeParity, MoeExpertParallel4AcrossTensorAndDataParallel) {  // one expert per rank
  expect_parity({.name = "moe_ep4_tp2", .model = "tiny-moe", .dp = 2, .tp = 2, .ep = 4,
                 .sequence_parallel = true});
}

TEST(RuntimeParity, MoeExpertParallel2InterleavedFullRecompute) {  // the exchange re-run in the backward
  expect_parity({.name = "moe_ep2_pp2_vpp2_full", .model = "tiny-moe", .dp = 2, .pp = 2, .vpp = 2, .ep = 2,
                 .schedule = ScheduleKind::Interleaved, .recompute = Recompute::Full});
}

TEST(RuntimeResumeParity, MoeExpertParallel2PipelineParallel2) {
  expect_resumed_parity({.name = "moe_ep2_pp2", .model = "tiny-moe", .dp = 2, .pp = 2, .ep = 2});
}

TEST(RuntimeResumeParity, MoeExpertParallel2Zero1) {  // expert optimizer state sharded over edp
  expect_resumed_parity({.name = "moe_ep2_tp2_zero1", .model = "tiny-moe", .dp = 2, .tp = 2, .ep = 2,
                         .zero = 1, .sequence_parallel = true});
}

// Issue 26: expert tensor parallel, context parallel and ZeRO-3 with experts.
TEST(RuntimeParity, MoeExpertTensorParallel2ExpertParallel2) {  // etp 2 x ep 2 = the stage, edp 1
  expect_parity({.name = "moe_etp2_ep2", .model = "tiny-moe", .dp = 2, .tp = 2, .ep = 2, .etp = 2,
                 .sequence_parallel = true});
}

TEST(RuntimeParity, MoeContextParallel2ExpertParallel2) {  // the ep group is the cp group
  expect_parity({.name = "moe_cp2_ep2", .model = "tiny-moe", .cp = 2, .ep = 2});
}

// Token dropping: the capacity is taken over the tokens a rank routes, so the one-rank
// reference routes the same groups: micro-batch 1 (one sequence) on both sides.
// Capacity factor 0.5: ceil(32 x 2 / 4 x 0.5) = 8 slots per expert of 64: half dropped.
TEST(RuntimeParity, MoeCapacityFactorExpertParallel2) {
  const TempDir dir("moe_capacity");
  models::ModelSpec m = models::load_model("tiny-moe");
  m.name = "tiny-moe-cf05";
  m.moe->capacity_factor = 0.5;
  const std::string model = write_model(m, dir);
  const TrainRun one = train({.name = "moe_cf_one", .model = model}, dir, kSteps);
  const TrainRun ep2 = train({.name = "moe_cf_ep2", .model = model, .dp = 2, .ep = 2}, dir, kSteps, kSmallBuckets);
  double max_diff = 0;
  ASSERT_NO_FATAL_FAILURE(expect_same_run("moe_cf_ep2", one, ep2, max_diff));
  std::printf("[ parity   ] %-26s 2 ranks: max relative loss diff %.1e against one rank, micro-batch 1\n",
              "moe_cf05_ep2", max_diff);
  EXPECT_LT(ep2.steps.back().loss, ep2.steps.front().loss);
}

TEST(RuntimeParity, MoeZero2ExpertParallel2) {  // gradients and optimizer state sharded, experts' over edp 2
  expect_parity({.name = "moe_zero2_ep2", .model = "tiny-moe", .dp = 2, .tp = 2, .ep = 2, .zero = 2,
                 .sequence_parallel = true});
}

TEST(RuntimeParity, MoeZero3ExpertParallel2) {  // dense shards over dp 2, experts over edp 2
  expect_parity({.name = "moe_zero3_ep2", .model = "tiny-moe", .dp = 2, .tp = 2, .ep = 2, .zero = 3,
                 .sequence_parallel = true});
}

}  // namespace
}  // namespace strata::testing

// Dense and MoE blocks alternating (moe.layer_step 2, as Llama 4 Maverick): tiny-moe with
// blocks 2 and 4 MoE, 1 and 3 dense, on 4 ranks (pp 2 puts one of each on every stage,
// ep 2 exchanges the MoE blocks' tokens) against the one-rank run of the same model.
namespace strata::testing {
namespace {

TEST(RuntimeParity, MoeInterleavedDenseBlocksExpertParallel2PipelineParallel2) {
  const TempDir dir("moe_interleaved");
  models::ModelSpec m = models::load_model("tiny-moe");
  m.name = "tiny-moe-step2";
  m.moe->first_dense_layers = 0;
  m.moe->layer_step = 2;
  const std::string model = write_model(m, dir);
  const TrainRun one = train({.name = "moe_step2_one", .model = model}, dir, kSteps);
  const TrainRun four =
      train({.name = "moe_step2_ep2_pp2", .model = model, .dp = 2, .pp = 2, .ep = 2}, dir, kSteps, kSmallBuckets);
  double max_diff = 0;
  ASSERT_NO_FATAL_FAILURE(expect_same_run("moe_step2_ep2_pp2", one, four, max_diff));
  // The dense blocks hold no expert weights: their gradient norms name the dense MLP.
  const auto& params = one.grad_norms.at("params");
  EXPECT_FALSE(params.contains("blocks.0.moe.router.weight"));
  EXPECT_TRUE(params.contains("blocks.1.moe.router.weight"));
  std::printf("[ parity   ] %-26s 4 ranks: max relative loss diff %.1e against one rank\n",
              "moe_step2_ep2_pp2", max_diff);
  EXPECT_LT(four.steps.back().loss, four.steps.front().loss);
}

}  // namespace
}  // namespace strata::testing
