#include "planner/search.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <ostream>

#include "common/errors.h"
#include "costmodel/cluster_spec.h"
#include "models/model_spec.h"
#include "planner/simulator.h"
#include "tests/tables_only_cluster.h"

namespace strata::planner {
namespace {

class SearchGpt2 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = new models::ModelSpec(models::load_model("gpt2-124m"));
    cluster_ = new costmodel::ClusterSpec(strata::testing::tables_only_cluster("dgx-a100"));
    SearchOptions o;
    o.gpus = 8;
    o.global_batch = 64;
    o.top_k = 1'000'000;  // keep every feasible candidate
    all_ = new SearchResult(search(*model_, *cluster_, o));
  }
  static void TearDownTestSuite() {
    delete all_;
    delete cluster_;
    delete model_;
  }
  static models::ModelSpec* model_;
  static costmodel::ClusterSpec* cluster_;
  static SearchResult* all_;
};
models::ModelSpec* SearchGpt2::model_ = nullptr;
costmodel::ClusterSpec* SearchGpt2::cluster_ = nullptr;
SearchResult* SearchGpt2::all_ = nullptr;

TEST_F(SearchGpt2, ReturnsOnlyValidFittingStrategiesSortedByTime) {
  const auto& r = *all_;
  ASSERT_GT(r.ranked.size(), 50u);
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    const Candidate& c = r.ranked[i];
    EXPECT_TRUE(validate(c.strategy, *model_).empty());
    EXPECT_EQ(c.strategy.gpus(), 8);
    EXPECT_EQ(c.strategy.global_batch, 64);
    EXPECT_TRUE(c.prediction.fits_memory);
    EXPECT_LE(c.prediction.peak_memory_gib, cluster_->device.memory_gib);
    EXPECT_EQ(c.stage_layers.size(), static_cast<std::size_t>(c.strategy.pp * c.strategy.vpp));
    if (i > 0) {
      const auto& a = r.ranked[i - 1].prediction;
      const auto& b = c.prediction;
      EXPECT_TRUE(a.iteration_s < b.iteration_s ||
                  (a.iteration_s == b.iteration_s && a.peak_memory_gib <= b.peak_memory_gib));
    }
  }
  EXPECT_FALSE(r.ranked.front().prediction.notes.empty());
}

TEST_F(SearchGpt2, CountsAddUp) {
  const auto& r = *all_;
  EXPECT_EQ(static_cast<std::int64_t>(r.ranked.size()) + r.infeasible_memory,
            r.candidates_evaluated);
  EXPECT_GE(r.invalid, 0);
  EXPECT_GE(r.search_s, 0.0);
  EXPECT_FALSE(r.closest_infeasible.has_value());  // plenty fits
}

TEST_F(SearchGpt2, CoversEveryAxisOfTheSpace) {
  std::set<int> tps, pps, vpps, zeros;
  std::set<std::int64_t> mbs;
  std::set<Recompute> rcs;
  std::set<bool> sps;
  std::set<ScheduleKind> kinds;
  for (const auto& c : all_->ranked) {
    tps.insert(c.strategy.tp);
    pps.insert(c.strategy.pp);
    vpps.insert(c.strategy.vpp);
    zeros.insert(c.strategy.zero);
    mbs.insert(c.strategy.micro_batch);
    rcs.insert(c.strategy.recompute);
    sps.insert(c.strategy.sequence_parallel);
    kinds.insert(c.strategy.schedule);
  }
  EXPECT_EQ(tps, (std::set<int>{1, 2, 4}));  // 8 does not divide 12 heads
  EXPECT_EQ(pps, (std::set<int>{1, 2, 4, 8}));
  EXPECT_TRUE(vpps.count(1) && vpps.count(2) && vpps.count(3));
  EXPECT_EQ(zeros, (std::set<int>{0, 1, 2, 3}));
  EXPECT_EQ(mbs, (std::set<std::int64_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(rcs.size(), 3u);
  EXPECT_EQ(sps.size(), 2u);
  EXPECT_EQ(kinds, (std::set<ScheduleKind>{ScheduleKind::OneFOneB, ScheduleKind::Interleaved}));
}

TEST_F(SearchGpt2, MemoryIsNonIncreasingInTheZeroStage) {
  std::map<std::tuple<int, int, int, int, std::int64_t, int, bool>, std::map<int, double>> mem;
  for (const auto& c : all_->ranked) {
    const Strategy& s = c.strategy;
    mem[{s.dp, s.tp, s.pp, s.vpp, s.micro_batch, static_cast<int>(s.recompute),
         s.sequence_parallel}][s.zero] = c.prediction.peak_memory_gib;
  }
  int pairs = 0;
  for (const auto& [key, by_zero] : mem) {
    if (by_zero.count(0) && by_zero.count(1)) {
      EXPECT_LE(by_zero.at(1), by_zero.at(0));
      ++pairs;
    }
    // ZeRO-2 shards the gradients but holds one layer group's whole fp32 gradient before
    // its reduce-scatter: with a small dp it can exceed ZeRO-1 by at most that (GPT-2's
    // largest group is the tied embedding, vocab x hidden values, split over tp).
    const int tp = std::get<1>(key);
    const double group_gib = 4.0 * static_cast<double>(model_->vocab) * model_->hidden / tp / (1024.0 * 1024 * 1024);
    if (by_zero.count(1) && by_zero.count(2)) { EXPECT_LE(by_zero.at(2), by_zero.at(1) + group_gib); }
  }
  EXPECT_GT(pairs, 10);
}

TEST_F(SearchGpt2, PredictionsEqualAStandaloneSimulation) {
  // The search's caches must not change any number.
  const auto& r = *all_;
  for (std::size_t i = 0; i < r.ranked.size(); i += std::max<std::size_t>(1, r.ranked.size() / 25)) {
    const Candidate& c = r.ranked[i];
    const auto p = simulate(*model_, *cluster_, c.strategy).prediction;
    EXPECT_DOUBLE_EQ(p.iteration_s, c.prediction.iteration_s) << i;
    EXPECT_DOUBLE_EQ(p.peak_memory_gib, c.prediction.peak_memory_gib) << i;
    EXPECT_DOUBLE_EQ(p.breakdown_s.dp_comm, c.prediction.breakdown_s.dp_comm) << i;
  }
}

TEST_F(SearchGpt2, TopKKeepsTheBest) {
  SearchOptions o;
  o.gpus = 8;
  o.global_batch = 64;
  o.top_k = 3;
  const auto r = search(*model_, *cluster_, o);
  ASSERT_EQ(r.ranked.size(), 3u);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(r.ranked[i].strategy, all_->ranked[i].strategy);
  EXPECT_EQ(r.candidates_evaluated, all_->candidates_evaluated);
}

TEST_F(SearchGpt2, PinnedAxesAreRespected) {
  SearchOptions o;
  o.gpus = 8;
  o.global_batch = 64;
  o.top_k = 1000;
  o.tp = 2;
  o.recompute = Recompute::Full;
  o.sequence_parallel = true;
  const auto r = search(*model_, *cluster_, o);
  ASSERT_FALSE(r.ranked.empty());
  for (const auto& c : r.ranked) {
    EXPECT_EQ(c.strategy.tp, 2);
    EXPECT_EQ(c.strategy.recompute, Recompute::Full);
    EXPECT_TRUE(c.strategy.sequence_parallel);
  }
}

TEST_F(SearchGpt2, GPipeOnlyWhenAskedFor) {
  SearchOptions o;
  o.gpus = 8;
  o.global_batch = 64;
  o.top_k = 1000;
  o.schedule = ScheduleKind::GPipe;
  const auto r = search(*model_, *cluster_, o);
  ASSERT_FALSE(r.ranked.empty());
  for (const auto& c : r.ranked) {
    EXPECT_EQ(c.strategy.schedule, ScheduleKind::GPipe);
    EXPECT_EQ(c.strategy.vpp, 1);
  }
}

TEST_F(SearchGpt2, ReportsProgress) {
  SearchOptions o;
  o.gpus = 8;
  o.global_batch = 64;
  std::int64_t last_done = -1, last_total = -1;
  o.progress = [&](std::int64_t done, std::int64_t total) {
    EXPECT_GE(done, last_done);
    last_done = done;
    last_total = total;
  };
  const auto r = search(*model_, *cluster_, o);
  EXPECT_EQ(last_done, last_total);
  EXPECT_EQ(last_total, r.candidates_evaluated + r.invalid);
}

TEST(Search, ReportsTheClosestInfeasibleWhenNothingFits) {
  const auto model = models::load_model("gpt3-175b");
  const auto cluster = strata::testing::tables_only_cluster("dgx-a100");
  SearchOptions o;
  o.gpus = 8;
  o.global_batch = 16;
  const auto r = search(model, cluster, o);
  EXPECT_TRUE(r.ranked.empty());
  EXPECT_EQ(r.infeasible_memory, r.candidates_evaluated);
  ASSERT_TRUE(r.closest_infeasible.has_value());
  EXPECT_FALSE(r.closest_infeasible->prediction.fits_memory);
  EXPECT_GT(r.closest_infeasible->prediction.peak_memory_gib, cluster.device.memory_gib);
}

TEST(Search, RejectsBadOptions) {
  const auto model = models::load_model("gpt2-124m");
  const auto cluster = strata::testing::tables_only_cluster("dgx-a100");
  SearchOptions o;
  o.gpus = 0;
  EXPECT_THROW(search(model, cluster, o), InputError);
  o.gpus = 1'000'000;
  EXPECT_THROW(search(model, cluster, o), InputError);
  o.gpus = 8;
  o.top_k = 0;
  EXPECT_THROW(search(model, cluster, o), InputError);
}

TEST(Search, PinnedOptionsThatCannotWorkNameTheRule) {
  const auto model = models::load_model("gpt2-124m");
  const auto cluster = strata::testing::tables_only_cluster("dgx-a100");
  SearchOptions o;
  o.gpus = 8;
  o.global_batch = 64;
  o.tp = 8;  // 12 heads
  try {
    search(model, cluster, o);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("strategy.tp (8) must divide model.heads (12)"),
              std::string::npos)
        << e.what();
  }
  o.tp.reset();
  o.dp = 3;  // no layout of 8 GPUs has dp 3
  EXPECT_THROW(search(model, cluster, o), InputError);
}

// Long sequences bring context parallel into the space: cp = 2 and 4 keep >= 2048 tokens
// per rank of gpt2's 8192-token variant, cp = 8 would not (and is only tried when pinned).
TEST(Search, ContextParallelIsADimensionForLongSequences) {
  auto model = models::load_model("gpt2-124m");
  model.seq_len = 8192;
  const auto cluster = strata::testing::tables_only_cluster("dgx-a100");
  SearchOptions o;
  o.gpus = 8;
  o.global_batch = 8;
  o.top_k = 1'000'000;
  o.recompute = Recompute::None;
  const auto r = search(model, cluster, o);
  std::set<int> cps;
  for (const auto& c : r.ranked) {
    cps.insert(c.strategy.cp);
    EXPECT_EQ(c.strategy.gpus(), 8);
  }
  EXPECT_EQ(cps, (std::set<int>{1, 2, 4}));
  o.cp = 8;
  const auto pinned = search(model, cluster, o);
  ASSERT_FALSE(pinned.ranked.empty());
  for (const auto& c : pinned.ranked) EXPECT_EQ(c.strategy.cp, 8);
  // An unfused-attention stack cannot run context parallel: refused by name.
  const auto unfused = costmodel::load_software_stack("megatron-2021");
  o.stack = &unfused;
  EXPECT_THROW(search(model, cluster, o), InputError);
  o.cp.reset();
  for (const auto& c : search(model, cluster, o).ranked) EXPECT_EQ(c.strategy.cp, 1);
}

// A stack without tensor or pipeline parallelism (llm-foundry's FSDP, supports tensor_parallel /
// pipeline_parallel false) gets only data-parallel layouts from the search, and a pinned tp or pp
// on it is one error naming the axis.
TEST(Search, AStackWithoutTensorOrPipelineParallelismGetsDataParallelLayouts) {
  const auto model = models::load_model("gpt2-124m");
  const auto cluster = strata::testing::tables_only_cluster("dgx-a100");
  const auto foundry = costmodel::load_software_stack("llm-foundry-2023");
  SearchOptions o;
  o.gpus = 8;
  o.global_batch = 64;
  o.top_k = 1'000'000;
  o.stack = &foundry;
  const auto r = search(model, cluster, o);
  ASSERT_FALSE(r.ranked.empty());
  for (const auto& c : r.ranked) {
    EXPECT_EQ(c.strategy.tp, 1);
    EXPECT_EQ(c.strategy.pp, 1);
    EXPECT_EQ(c.strategy.dp, 8);
  }
  o.tp = 2;
  try {
    search(model, cluster, o);
    ADD_FAILURE() << "tp 2 on llm-foundry-2023 was searched";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor parallelism (strategy.tp)"), std::string::npos) << e.what();
  }
  o.tp.reset();
  o.pp = 2;
  EXPECT_THROW(search(model, cluster, o), InputError);
}

// Two searches of one space agree: the counts, and every kept plan's strategy, stage split,
// time and memory.
void expect_same_search(const SearchResult& a, const SearchResult& b, const std::string& what) {
  EXPECT_EQ(a.candidates_evaluated, b.candidates_evaluated) << what;
  EXPECT_EQ(a.infeasible_memory, b.infeasible_memory) << what;
  EXPECT_EQ(a.invalid, b.invalid) << what;
  ASSERT_EQ(a.ranked.size(), b.ranked.size()) << what;
  for (std::size_t i = 0; i < a.ranked.size(); ++i) {
    EXPECT_EQ(a.ranked[i].strategy, b.ranked[i].strategy) << what << ", #" << i;
    EXPECT_EQ(a.ranked[i].stage_layers, b.ranked[i].stage_layers) << what << ", #" << i;
    EXPECT_EQ(a.ranked[i].prediction.iteration_s, b.ranked[i].prediction.iteration_s) << what << ", #" << i;
    EXPECT_EQ(a.ranked[i].prediction.peak_memory_gib, b.ranked[i].prediction.peak_memory_gib) << what << ", #" << i;
  }
}

// The search simulates slices of the space on several threads; the ranking, the counts
// and every prediction are the same as on one.
TEST_F(SearchGpt2, ThreadsDoNotChangeTheResult) {
  SearchOptions o;
  o.gpus = 8;
  o.global_batch = 64;
  o.top_k = 50;
  o.threads = 1;
  const auto one = search(*model_, *cluster_, o);
  o.threads = 3;
  expect_same_search(one, search(*model_, *cluster_, o), "3 threads");
  // The whole-space run of the fixture (default threads) agrees too.
  for (std::size_t i = 0; i < one.ranked.size(); ++i)
    EXPECT_EQ(one.ranked[i].strategy, all_->ranked[i].strategy) << i;
}

// An MoE space of ~1,000 candidates on up to 5 threads: the screening groups (tp, cp, ep,
// etp) are cut into pieces a thread each, and whichever thread screens a piece, the result
// is the one-thread result, every number of every kept plan.
TEST(Search, ThreadsDoNotChangeAnMoeResult) {
  const auto model = models::load_model("tiny-moe");
  const auto cluster = strata::testing::tables_only_cluster("dgx-h100");
  SearchOptions o;
  o.gpus = 64;
  o.top_k = 20;
  o.threads = 1;
  const auto one = search(model, cluster, o);
  ASSERT_GT(one.candidates_evaluated, 1000);
  for (int threads : {2, 5}) {
    o.threads = threads;
    expect_same_search(one, search(model, cluster, o), fmt::format("{} threads", threads));
  }
}

// The MoE recompute module sets (search.cpp's pass 1b) are screened on the thread that
// screened their layout, in rounds: whatever the number of threads, the same candidates and
// the same result. DeepSeek-V3 at tp 4 on 2048 GPUs, where the sets decide what fits.
TEST(Search, ThreadsDoNotChangeTheRecomputeModuleSets) {
  const auto model = models::load_model("deepseek-v3");
  const auto cluster = strata::testing::tables_only_cluster("dgx-h100");
  SearchOptions o;
  o.gpus = 2048;
  o.global_batch = 512;
  o.tp = 4;
  o.pp = 1;
  o.top_k = 20;
  o.threads = 1;
  const auto one = search(model, cluster, o);
  bool with_sets = false;
  for (const Candidate& c : one.ranked) with_sets = with_sets || c.strategy.recompute_modules.megatron();
  ASSERT_TRUE(with_sets) << "no module-set plan in the top 20: the test checks nothing";
  ASSERT_GT(one.candidates_evaluated, 512);  // enough for 3 threads (256 candidates each at least)
  for (int threads : {2, 3}) {
    o.threads = threads;
    expect_same_search(one, search(model, cluster, o), fmt::format("{} threads", threads));
  }
}

// Pruning (SearchOptions::prune) leaves out candidates whose lower bound on the iteration
// time exceeds the k-th best: it must not change anything the search returns. Each case
// runs both ways and compares the top-k, every number of each kept plan, the counts, and
// the closest candidate when nothing fits. prune = false simulates every valid candidate
// and checks on each one that the screened memory equals the simulation's and that the
// bound is below the simulated time (an InternalError would fail the test).
struct PruneCase {
  const char* model;
  const char* cluster;
  int gpus;
  std::int64_t global_batch;
  int top_k;
  std::int64_t seq_len = 0;   // 0: the model's
  const char* stack = "";     // "": the device's default
  const char* precision = "";
};

// ctest names the cases by this (not by the bytes of the struct).
void PrintTo(const PruneCase& pc, std::ostream* os) {
  *os << pc.model << "_" << pc.cluster << "_x" << pc.gpus << "_gb" << pc.global_batch << "_top" << pc.top_k;
  if (pc.seq_len > 0) *os << "_seq" << pc.seq_len;
  if (*pc.stack) *os << "_" << pc.stack;
  if (*pc.precision) *os << "_" << pc.precision;
}

void expect_same_search(const PruneCase& pc) {
  SCOPED_TRACE(fmt::format("{} on {} x {} gb {} top {} seq {} stack '{}' precision '{}'", pc.model,
                           pc.gpus, pc.cluster, pc.global_batch, pc.top_k, pc.seq_len, pc.stack,
                           pc.precision));
  auto model = models::load_model(pc.model);
  if (pc.seq_len > 0) model.seq_len = pc.seq_len;
  const auto cluster = costmodel::load_cluster(pc.cluster);
  const costmodel::SoftwareStack stack =
      *pc.stack ? costmodel::load_software_stack(pc.stack)
                : costmodel::load_software_stack(costmodel::default_software_stack_name(cluster.device));
  SearchOptions o;
  o.gpus = pc.gpus;
  o.global_batch = pc.global_batch;
  o.top_k = pc.top_k;
  o.stack = &stack;
  o.precision = pc.precision;
  o.prune = false;
  const SearchResult all = search(model, cluster, o);
  o.prune = true;
  const SearchResult pruned = search(model, cluster, o);

  EXPECT_EQ(pruned.candidates_evaluated, all.candidates_evaluated);
  EXPECT_EQ(pruned.infeasible_memory, all.infeasible_memory);
  EXPECT_EQ(pruned.invalid, all.invalid);
  EXPECT_EQ(all.simulated, all.candidates_evaluated);  // everything, over memory too
  EXPECT_EQ(all.pruned, 0);
  EXPECT_LE(pruned.simulated + pruned.pruned, pruned.candidates_evaluated - pruned.infeasible_memory);
  ASSERT_EQ(pruned.ranked.size(), all.ranked.size());
  for (std::size_t i = 0; i < all.ranked.size(); ++i) {
    const Candidate& a = all.ranked[i];
    const Candidate& b = pruned.ranked[i];
    EXPECT_EQ(b.strategy, a.strategy) << i;
    EXPECT_EQ(b.stage_layers, a.stage_layers) << i;
    const Prediction& pa = a.prediction;
    const Prediction& pb = b.prediction;
    EXPECT_EQ(pb.iteration_s, pa.iteration_s) << i;
    EXPECT_EQ(pb.peak_memory_gib, pa.peak_memory_gib) << i;
    EXPECT_EQ(pb.mfu, pa.mfu) << i;
    EXPECT_EQ(pb.tokens_per_s, pa.tokens_per_s) << i;
    EXPECT_EQ(pb.bubble_fraction, pa.bubble_fraction) << i;
    EXPECT_EQ(pb.stage_memory_gib, pa.stage_memory_gib) << i;
    for (auto [x, y] : {std::pair{pb.breakdown_s.compute, pa.breakdown_s.compute},
                        {pb.breakdown_s.tp_comm, pa.breakdown_s.tp_comm},
                        {pb.breakdown_s.pp_comm, pa.breakdown_s.pp_comm},
                        {pb.breakdown_s.dp_comm, pa.breakdown_s.dp_comm},
                        {pb.breakdown_s.cp_comm, pa.breakdown_s.cp_comm},
                        {pb.breakdown_s.ep_comm, pa.breakdown_s.ep_comm},
                        {pb.breakdown_s.optimizer, pa.breakdown_s.optimizer},
                        {pb.breakdown_s.bubble, pa.breakdown_s.bubble}})
      EXPECT_EQ(x, y) << i;
    EXPECT_EQ(pb.notes, pa.notes) << i;
  }
  ASSERT_EQ(pruned.closest_infeasible.has_value(), all.closest_infeasible.has_value());
  if (all.closest_infeasible) {
    EXPECT_EQ(pruned.closest_infeasible->strategy, all.closest_infeasible->strategy);
    EXPECT_EQ(pruned.closest_infeasible->prediction.peak_memory_gib,
              all.closest_infeasible->prediction.peak_memory_gib);
    EXPECT_EQ(pruned.closest_infeasible->prediction.iteration_s,
              all.closest_infeasible->prediction.iteration_s);
  }
}

// One ctest per case, so the (unpruned) full searches run in parallel.
class SearchPruningCase : public ::testing::TestWithParam<PruneCase> {};

TEST_P(SearchPruningCase, SameResultAsSimulatingEveryCandidate) { expect_same_search(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    SearchPruning, SearchPruningCase,
    ::testing::Values(
        PruneCase{"gpt2-124m", "dgx-a100", 8, 64, 10},
        PruneCase{"gpt2-124m", "dgx-a100", 8, 64, 1},
        // Many micro-batches: walks extended from two shorter ones (no bound proven).
        PruneCase{"gpt2-124m", "dgx-h100", 16, 4096, 5},
        // Long sequences: context parallel in the space.
        PruneCase{"gpt2-124m", "dgx-a100", 8, 8, 10, 8192},
        PruneCase{"llama2-7b", "dgx-h100", 32, 256, 10},
        PruneCase{"llama2-7b", "dgx-h100", 16, 128, 3, 0, "", "fp8"},
        PruneCase{"megatron-1.7b", "dgx-a100", 32, 512, 10, 0, "megatron-2021"},
        PruneCase{"mixtral-8x7b", "dgx-h100", 32, 128, 10},
        // The MoE space at scale (issue 26): 35,802 candidates, expert layouts of every
        // (tp, pp, dp); and a small one where many fit and more are walked.
        PruneCase{"deepseek-v3", "dgx-h100", 2048, 512, 10},
        PruneCase{"qwen1.5-moe-a2.7b", "dgx-h100", 64, 256, 10},
        // Dense and MoE blocks alternating (moe.layer_step 2): blocks of two costs and sizes.
        PruneCase{"llama4-maverick", "dgx-h100", 256, 512, 10},
        // Nothing fits: the closest candidate is the same.
        PruneCase{"gpt3-175b", "dgx-a100", 8, 16, 10}));

// The pruning does prune: on gpt2's 8-GPU space most candidates that fit are never walked.
TEST_F(SearchGpt2, PruningLeavesOutMostCandidates) {
  SearchOptions o;
  o.gpus = 8;
  o.global_batch = 64;
  o.top_k = 10;
  const SearchResult r = search(*model_, *cluster_, o);
  const std::int64_t fit = r.candidates_evaluated - r.infeasible_memory;
  EXPECT_GT(r.pruned, fit / 2) << r.simulated << " simulated of " << fit;
  EXPECT_EQ(r.simulated + r.pruned, fit);
}

}  // namespace
}  // namespace strata::planner
