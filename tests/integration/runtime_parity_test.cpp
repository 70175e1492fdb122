// Parity of `strata train` under mpirun: every parallel layout with dp * tp * pp <= 4
// trains the tiny GPT (and the tiny Llama) to the same per-step losses as one rank
// (relative difference <= 1e-5 over 10 steps), with the same global gradient norm and
// the same per-parameter gradient norms at the first step. The per-parameter norms catch
// what a loss curve under Adam cannot: a gradient scaled by a missing or doubled
// all-reduce (Adam's update is nearly invariant to a gradient's scale).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
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
    ASSERT_TRUE(std::regex_search(run.result.out, m, std::regex(R"(dp gradient reduction: (\d+) )")))
        << run.result.out;
    const bool small = std::search(extra.begin(), extra.end(), kSmallBuckets.begin(), kSmallBuckets.end()) != extra.end();
    if (small) EXPECT_GE(std::stoi(m[1].str()), 3) << l.name;
  }
  const auto& want = ref.grad_norms.at("params");
  const auto& got = run.grad_norms.at("params");
  EXPECT_EQ(got.size(), want.size()) << l.name;
  for (const auto& [name, norm] : want.items()) {
    ASSERT_TRUE(got.contains(name)) << l.name << " lacks " << name;
    const double w = norm.get<double>(), g = got.at(name).get<double>();
    EXPECT_LE(std::abs(g - w), 1e-4 * w + 1e-8) << l.name << " " << name << ": " << g << " vs " << w;
  }
  // and training actually learns
  EXPECT_LT(run.steps.back().loss, run.steps.front().loss) << l.name;
}

Layout layout(std::string name) {
  Layout l;
  l.name = std::move(name);
  return l;
}

TEST(RuntimeParity, DataParallel2) {
  Layout l = layout("dp2");
  l.dp = 2;
  expect_parity(l);
}

TEST(RuntimeParity, DataParallel2ReducedAfterTheBackwardPass) {
  Layout l = layout("dp2_no_overlap");
  l.dp = 2;
  expect_parity(l, {"--no-overlap-grad-reduce"});
}

TEST(RuntimeParity, DataParallel2OneBucket) {
  Layout l = layout("dp2_one_bucket");
  l.dp = 2;
  expect_parity(l, {"--grad-bucket-params", "100000000"});
}

TEST(RuntimeParity, TensorParallel2) {
  Layout l = layout("tp2");
  l.tp = 2;
  expect_parity(l);
}

TEST(RuntimeParity, TensorParallel2SequenceParallel) {
  Layout l = layout("tp2_sp");
  l.tp = 2;
  l.sequence_parallel = true;
  expect_parity(l);
}

TEST(RuntimeParity, TensorParallel4) {
  Layout l = layout("tp4");  // vocabulary padded to 512: ranks 2 and 3 hold no real rows
  l.tp = 4;
  expect_parity(l);
}

TEST(RuntimeParity, PipelineParallel2OneFOneB) {
  Layout l = layout("pp2");
  l.pp = 2;
  expect_parity(l);
}

TEST(RuntimeParity, PipelineParallel2GPipe) {
  Layout l = layout("pp2_gpipe");
  l.pp = 2;
  l.schedule = ScheduleKind::GPipe;
  expect_parity(l);
}

TEST(RuntimeParity, PipelineParallel2UnevenStages) {
  Layout l = layout("pp2_uneven");
  l.pp = 2;
  l.stage_layers = {{0, 1}, {2, 3, 4, 5}};
  expect_parity(l);
}

TEST(RuntimeParity, PipelineParallel4) {
  Layout l = layout("pp4");
  l.pp = 4;
  expect_parity(l);
}

TEST(RuntimeParity, InterleavedVpp2) {
  Layout l = layout("pp2_vpp2");
  l.pp = 2;
  l.vpp = 2;
  l.schedule = ScheduleKind::Interleaved;
  expect_parity(l);
}

TEST(RuntimeParity, TensorAndPipelineParallel) {
  Layout l = layout("tp2_pp2");
  l.tp = 2;
  l.pp = 2;
  expect_parity(l);
}

TEST(RuntimeParity, DataAndTensorParallel) {
  Layout l = layout("dp2_tp2");
  l.dp = 2;
  l.tp = 2;
  expect_parity(l);
}

TEST(RuntimeParity, DataAndPipelineParallel) {
  Layout l = layout("dp2_pp2");
  l.dp = 2;
  l.pp = 2;
  expect_parity(l);
}

TEST(RuntimeParity, DataAndPipelineParallelPipelineOuterRankOrder) {
  Layout l = layout("dp2_pp2_order");
  l.dp = 2;
  l.pp = 2;
  l.rank_order = "pp-dp-tp";
  expect_parity(l);
}

TEST(RuntimeParity, Zero1DataParallel2) {
  Layout l = layout("zero1_dp2");
  l.dp = 2;
  l.zero = 1;
  expect_parity(l);
}

TEST(RuntimeParity, Zero1DataParallel2PipelineParallel2) {
  Layout l = layout("zero1_dp2_pp2");
  l.dp = 2;
  l.pp = 2;
  l.zero = 1;
  expect_parity(l);
}

TEST(RuntimeParity, Zero1DataParallel2TensorParallel2SequenceParallel) {
  Layout l = layout("zero1_dp2_tp2_sp");
  l.dp = 2;
  l.tp = 2;
  l.sequence_parallel = true;
  l.zero = 1;
  expect_parity(l);
}

TEST(RuntimeParity, RecomputeSelectiveTensorParallel) {
  Layout l = layout("selective_tp2_sp");
  l.tp = 2;
  l.sequence_parallel = true;
  l.recompute = Recompute::Selective;
  expect_parity(l);
}

TEST(RuntimeParity, RecomputeFullPipelineParallel) {
  Layout l = layout("full_pp2_tp2");
  l.pp = 2;
  l.tp = 2;
  l.recompute = Recompute::Full;
  expect_parity(l);
}

TEST(RuntimeParity, RecomputeModesOnOneRank) {
  for (auto mode : {Recompute::Selective, Recompute::Full}) {
    Layout l = layout(std::string("one_rank_") + planner::to_string(mode));
    l.recompute = mode;
    expect_parity(l);
  }
}

TEST(RuntimeParity, LlamaTensorParallel2) {
  Layout l = layout("llama_tp2");
  l.model = "tiny-llama";
  l.tp = 2;
  expect_parity(l);
}

TEST(RuntimeParity, LlamaTensorPipelineSequenceParallel) {
  Layout l = layout("llama_tp2_pp2_sp");
  l.model = "tiny-llama";
  l.tp = 2;
  l.pp = 2;
  l.sequence_parallel = true;
  expect_parity(l);
}

TEST(RuntimeParity, LlamaDataParallelZero1) {
  Layout l = layout("llama_dp2_zero1");
  l.model = "tiny-llama";
  l.dp = 2;
  l.zero = 1;
  expect_parity(l);
}

}  // namespace
}  // namespace strata::testing
