// `strata train` under mpirun when things go wrong or stop: a killed rank ends the job
// within a bounded time; a world size that does not match the plan, or any other bad
// input, is an error on every rank that rank 0 reports once; resume continues the exact
// loss curve; corrupt, mismatched or incomplete checkpoints are rejected or skipped;
// token and text files train, bad ones are errors.
#include <cmath>
#include <numbers>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "runtime/data_loader.h"
#include "tests/integration/runtime_mpi_util.h"

namespace strata::testing {
namespace {

Layout dp2() {
  Layout l;
  l.name = "dp2";
  l.dp = 2;
  return l;
}

int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(RuntimeFaults, KilledRankEndsTheJobWithinBoundedTime) {
  const TempDir dir("fault_kill");
  const std::string plan = write_plan(dp2(), dir);
  const RunResult r = mpirun_strata(2, {"train", "--plan", plan, "--steps", "1000",
                                        "--debug-die-at-step", "3"}, 60);
  EXPECT_FALSE(r.timed_out) << "the surviving rank hung";
  EXPECT_TRUE(r.signaled || r.exit_code != 0) << r.out << r.err;
  EXPECT_LT(r.wall_s, 60);
  EXPECT_NE(r.out.find("step     2/1000"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("step     3/1000"), std::string::npos) << r.out;
}

TEST(RuntimeFaults, ErrorOnOneRankDuringTrainingEndsTheJob) {
  const TempDir dir("fault_throw");
  const std::string plan = write_plan(dp2(), dir);
  const RunResult r = mpirun_strata(2, {"train", "--plan", plan, "--steps", "1000",
                                        "--debug-throw-at-step", "3"}, 60);
  EXPECT_FALSE(r.timed_out) << "the other rank hung";
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("error: rank 1: debug: failure injected before step 3"), std::string::npos) << r.err;
}

TEST(RuntimeFaults, UnwritableCheckpointFolderFailsBeforeTraining) {
  const TempDir dir("fault_ckpt_dir");
  std::ofstream(dir / "a_file") << "x";
  const RunResult r = mpirun_strata(2, {"train", "--plan", write_plan(dp2(), dir), "--checkpoint-dir",
                                        (dir / "a_file" / "ckpt").string()}, 60);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(count(r.err, "cannot create the folder"), 1) << r.err;  // every rank fails, rank 0 says so
  EXPECT_EQ(r.out.find("step "), std::string::npos) << r.out;
}

TEST(RuntimeFaults, WorldSizeMismatchIsAnErrorOnEveryRank) {
  const TempDir dir("fault_world");
  const std::string plan = write_plan(dp2(), dir);
  const RunResult r = mpirun_strata(3, {"train", "--plan", plan, "--steps", "2"}, 60);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // Every rank fails with exit 2; only rank 0 prints the (identical) line.
  EXPECT_EQ(count(r.err, "error: the plan needs dp x tp x pp = 2 x 1 x 1 = 2 ranks but MPI started 3"), 1)
      << r.err;
  EXPECT_EQ(count(r.err, "error:"), 1) << r.err;
}

// Context parallel cuts each sequence into 2 x cp chunks: a sequence that does not divide
// is refused by name on every rank (one line), as is a world that lacks the cp ranks.
TEST(RuntimeFaults, ContextParallelThatCannotSplitTheSequenceIsAnError) {
  const TempDir dir("fault_cp");
  Layout cp3;
  cp3.name = "cp3";
  cp3.cp = 3;
  cp3.global_batch = 8;
  const std::string plan = write_plan(cp3, dir);
  RunResult r = mpirun_strata(3, {"train", "--plan", plan, "--steps", "2"}, 60);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(count(r.err, "strategy.cp (3) needs 2 x cp = 6 to divide model.seq_len (32)"), 1) << r.err;
  EXPECT_EQ(count(r.err, "error:"), 1) << r.err;
  Layout cp2;
  cp2.name = "cp2";
  cp2.cp = 2;
  cp2.global_batch = 8;
  const std::string plan2 = write_plan(cp2, dir);
  r = mpirun_strata(3, {"train", "--plan", plan2, "--steps", "2"}, 60);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(count(r.err, "error: the plan needs dp x tp x pp x cp = 1 x 1 x 1 x 2 = 2 ranks but MPI started 3"), 1)
      << r.err;
}

TEST(RuntimeFaults, BadFlagsAreErrorsBeforeMpiStarts) {
  const TempDir dir("fault_flags");
  const std::string plan = write_plan(dp2(), dir);
  RunResult r = run_strata({"train", "--plan", plan, "--resume"}, 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--resume needs --checkpoint-dir"), std::string::npos) << r.err;
  r = run_strata({"train", "--plan", plan, "--lr", "-1"}, 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--lr (-1) must be > 0"), std::string::npos) << r.err;
  r = run_strata({"train", "--plan", plan, "--cp-kv-exchange", "allgather"}, 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--cp-kv-exchange"), std::string::npos) << r.err;
  r = run_strata({"train", "--plan", (dir / "missing.yaml").string()}, 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing.yaml"), std::string::npos) << r.err;
}

// Bad input that every rank hits the same way (a plan that does not parse, a bad flag)
// is one `error:` line for the whole job, printed by rank 0, not one per rank.
TEST(RuntimeFaults, BadInputUnderMpirunIsOneErrorLine) {
  const TempDir dir("fault_bad_plan");
  const std::string bad = (dir / "bad.plan.yaml").string();
  std::ofstream(bad) << "strategy: [dp: 2\n";
  RunResult r = mpirun_strata(2, {"train", "--plan", bad, "--steps", "2"}, 60);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(count(r.err, "error:"), 1) << r.err;
  EXPECT_NE(r.err.find("bad.plan.yaml"), std::string::npos) << r.err;

  r = mpirun_strata(2, {"train", "--plan", write_plan(dp2(), dir), "--steps", "two"}, 60);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(count(r.err, "error:"), 1) << r.err;
  EXPECT_NE(r.err.find("--steps"), std::string::npos) << r.err;
}

struct Resume : ::testing::Test {
  TempDir dir{"resume"};
  Layout layout;
  void SetUp() override {
    layout.name = "dp2_pp2_zero1";
    layout.dp = 2;
    layout.pp = 2;
    layout.zero = 1;
  }
  RunResult run(const std::string& name, std::vector<std::string> extra, const Layout* other = nullptr) {
    const Layout& l = other ? *other : layout;
    std::vector<std::string> args = {"train", "--plan", write_plan(l, dir), "--metrics",
                                     (dir / (name + ".jsonl")).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return mpirun_strata(l.ranks(), args);
  }
  std::vector<StepRecord> metrics(const std::string& name) {
    return read_metrics((dir / (name + ".jsonl")).string());
  }
  std::string ckpt() const { return (dir / "ckpt").string(); }
};

TEST_F(Resume, ContinuesTheExactLossCurve) {
  ASSERT_EQ(run("full", {"--steps", "6"}).exit_code, 0);
  ASSERT_EQ(run("first", {"--steps", "3", "--checkpoint-dir", ckpt(), "--checkpoint-every", "3"}).exit_code, 0);
  const RunResult r = run("second", {"--steps", "6", "--checkpoint-dir", ckpt(), "--resume"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("resumed from"), std::string::npos);
  const auto full = metrics("full"), first = metrics("first"), second = metrics("second");
  ASSERT_EQ(full.size(), 6u);
  ASSERT_EQ(first.size(), 3u);
  ASSERT_EQ(second.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(first[static_cast<std::size_t>(i)].loss, full[static_cast<std::size_t>(i)].loss);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(second[static_cast<std::size_t>(i)].step, 4 + i);
    EXPECT_EQ(second[static_cast<std::size_t>(i)].loss, full[static_cast<std::size_t>(3 + i)].loss) << "step " << 4 + i;
    EXPECT_EQ(second[static_cast<std::size_t>(i)].grad_norm, full[static_cast<std::size_t>(3 + i)].grad_norm);
  }
}

// The schedule is a function of the step: a resumed cosine run applies the same rates
// (warm-up 2 steps to 1e-3, cosine to 1e-4 at step 6) and so the same losses.
TEST_F(Resume, ContinuesTheLearningRateSchedule) {
  const std::vector<std::string> sched = {"--lr-schedule", "cosine", "--warmup-steps", "2", "--decay-steps", "6",
                                          "--min-lr", "1e-4"};
  auto with = [&](std::vector<std::string> a) {
    a.insert(a.end(), sched.begin(), sched.end());
    return a;
  };
  ASSERT_EQ(run("full", with({"--steps", "6"})).exit_code, 0);
  ASSERT_EQ(run("const", {"--steps", "6"}).exit_code, 0);
  ASSERT_EQ(run("first", with({"--steps", "3", "--checkpoint-dir", ckpt(), "--checkpoint-every", "3"})).exit_code, 0);
  const RunResult r = run("second", with({"--steps", "6", "--checkpoint-dir", ckpt(), "--resume"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("warm-up 2 steps, cosine to 0.0001 at step 6"), std::string::npos) << r.out;
  const auto full = metrics("full"), constant = metrics("const"), second = metrics("second");
  ASSERT_EQ(full.size(), 6u);
  ASSERT_EQ(second.size(), 3u);
  EXPECT_DOUBLE_EQ(full[0].lr, 0.5e-3);
  EXPECT_DOUBLE_EQ(full[1].lr, 1e-3);
  EXPECT_NEAR(full[3].lr, 1e-4 + 0.9e-3 * 0.5 * (1 + std::cos(std::numbers::pi / 2)), 1e-12);
  EXPECT_DOUBLE_EQ(full[5].lr, 1e-4);
  EXPECT_DOUBLE_EQ(constant[0].lr, 1e-3);
  EXPECT_NE(full[1].loss, constant[1].loss);  // the first step's rate differs
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(second[static_cast<std::size_t>(i)].lr, full[static_cast<std::size_t>(3 + i)].lr);
    EXPECT_EQ(second[static_cast<std::size_t>(i)].loss, full[static_cast<std::size_t>(3 + i)].loss) << "step " << 4 + i;
  }
}

TEST_F(Resume, SkipsAnIncompleteCheckpoint) {
  ASSERT_EQ(run("first", {"--steps", "3", "--checkpoint-dir", ckpt(), "--checkpoint-every", "3"}).exit_code, 0);
  // a later checkpoint interrupted before its manifest was written
  fs::create_directories(fs::path(ckpt()) / "step_00000009");
  std::ofstream(fs::path(ckpt()) / "step_00000009" / "rank_00000.bin") << "partial";
  const RunResult r = run("second", {"--steps", "4", "--checkpoint-dir", ckpt(), "--resume"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("step_00000003 at step 3"), std::string::npos) << r.out;
}

TEST_F(Resume, CorruptShardIsAnError) {
  ASSERT_EQ(run("first", {"--steps", "3", "--checkpoint-dir", ckpt(), "--checkpoint-every", "3"}).exit_code, 0);
  const fs::path shard = fs::path(ckpt()) / "step_00000003" / "rank_00002.bin";
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x55');
  }
  const RunResult r = run("second", {"--steps", "6", "--checkpoint-dir", ckpt(), "--resume"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("rank_00002.bin is corrupt"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("step     4/"), std::string::npos);
}

TEST_F(Resume, DifferentLayoutIsAnError) {
  ASSERT_EQ(run("first", {"--steps", "3", "--checkpoint-dir", ckpt(), "--checkpoint-every", "3"}).exit_code, 0);
  Layout other;
  other.name = "tp2_pp2";
  other.tp = 2;
  other.pp = 2;
  const RunResult r = run("second", {"--steps", "6", "--checkpoint-dir", ckpt(), "--resume"}, &other);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("does not match this run: dp is '2' in the checkpoint but '1' now"), std::string::npos) << r.err;
}

// A ZeRO-1 checkpoint (the whole parameter buffer per rank) resumed as ZeRO-3 (owned
// shards only) or with context parallel is refused by the key that differs, not resharded.
TEST_F(Resume, DifferentZeroStageOrContextParallelIsAnError) {
  ASSERT_EQ(run("first", {"--steps", "3", "--checkpoint-dir", ckpt(), "--checkpoint-every", "3"}).exit_code, 0);
  Layout zero3 = layout;
  zero3.zero = 3;
  RunResult r = run("second", {"--steps", "6", "--checkpoint-dir", ckpt(), "--resume"}, &zero3);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("zero is '1' in the checkpoint but '3' now"), std::string::npos) << r.err;
  Layout cp2;
  cp2.name = "cp2_pp2_zero1";
  cp2.cp = 2;
  cp2.pp = 2;
  cp2.zero = 1;
  r = run("third", {"--steps", "6", "--checkpoint-dir", ckpt(), "--resume"}, &cp2);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("does not match this run: "), std::string::npos) << r.err;
}

TEST(RuntimeData, TokenFileTrainsTheSameOnEveryLayout) {
  const TempDir dir("data_tokens");
  std::vector<std::uint32_t> tokens;
  for (std::uint32_t i = 0; i < 5000; ++i) tokens.push_back((i * 7 + i / 13) % 256);
  const std::string file = (dir / "train.bin").string();
  runtime::DataLoader::write_token_file(file, tokens, 2);
  Layout one;
  one.name = "one";
  const TrainRun a = train(one, dir, 4, {"--data", file});
  Layout two = dp2();
  two.tp = 1;
  two.name = "tp_dp";
  const TrainRun b = train(two, dir, 4, {"--data", file});
  ASSERT_EQ(a.result.exit_code, 0) << a.result.err;
  ASSERT_EQ(b.result.exit_code, 0) << b.result.err;
  ASSERT_EQ(a.steps.size(), 4u);
  ASSERT_EQ(b.steps.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(a.steps[i].loss, b.steps[i].loss, 1e-5 * a.steps[i].loss);
}

TEST(RuntimeData, TextFileTrains) {
  const TempDir dir("data_text");
  std::string text;
  for (int i = 0; i < 200; ++i) text += "the quick brown fox jumps over the lazy dog. ";
  const std::string file = (dir / "train.txt").string();
  std::ofstream(file) << text;
  Layout l;
  l.name = "text";
  const TrainRun r = train(l, dir, 3, {"--text", file});
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  EXPECT_EQ(r.steps.size(), 3u);
}

TEST(RuntimeData, TokenOutsideTheVocabularyIsAnErrorOnEveryRank) {
  const TempDir dir("data_bad");
  const std::string file = (dir / "bad.bin").string();
  std::vector<std::uint32_t> tokens(400, 3);
  tokens[123] = 999;
  runtime::DataLoader::write_token_file(file, tokens, 2);
  const RunResult r = mpirun_strata(2, {"train", "--plan", write_plan(dp2(), dir), "--data", file}, 60);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(count(r.err, "token 999 at position 123 is >= model.vocab (256)"), 1) << r.err;  // rank 0 only
}


// ---- Training safety: hyper-parameters, divergence, memory, folder ownership ---------

void edit_file(const std::string& path, const std::string& from, const std::string& to) {
  std::string text = read_all(path);
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << path << " lacks `" << from << "`";
  text.replace(at, from.size(), to);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

struct SafetyCase {
  std::string name;
  int ranks;                        // 1: dp1 plan, 2: dp2 plan
  std::vector<std::string> args;    // after `train --plan P`; "{dir}" is the test folder
  std::string mentions;             // the one error line names this
  std::vector<std::pair<std::string, std::string>> plan_edits = {};
  bool prior_run = false;           // a first run writes {dir}/ck/step_00000001 before
  std::vector<std::string> present = {}, absent = {};  // under {dir} after the run
};

void PrintTo(const SafetyCase& c, std::ostream* os) { *os << c.name; }

class TrainingSafety : public ::testing::TestWithParam<SafetyCase> {};

TEST_P(TrainingSafety, RefusedWithOneErrorLineAndNoBadCheckpoint) {
  const SafetyCase& c = GetParam();
  const TempDir dir("safety_" + c.name);
  Layout l = c.ranks == 2 ? dp2() : Layout{};
  if (c.ranks == 1) l.name = "one";
  const std::string plan = write_plan(l, dir);
  for (const auto& [from, to] : c.plan_edits) edit_file(plan, from, to);
  if (c.prior_run) {
    const RunResult first = mpirun_strata(c.ranks, {"train", "--plan", write_plan(l, dir), "--steps", "1",
                                                    "--checkpoint-dir", (dir / "ck").string()});
    ASSERT_EQ(first.exit_code, 0) << first.err;
  }
  std::vector<std::string> args = {"train", "--plan", plan};
  for (std::string a : c.args) {
    for (size_t p; (p = a.find("{dir}")) != std::string::npos;) a.replace(p, 5, dir.path.string());
    args.push_back(a);
  }
  const RunResult r = mpirun_strata(c.ranks, args, 90);
  SCOPED_TRACE(r.out + r.err);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count(r.err, "error:"), 1) << "one error line for the job";
  EXPECT_NE(r.err.find(c.mentions), std::string::npos) << "should say " << c.mentions;
  for (const char* bad : {"internal:", "bad_alloc", "terminate called", "Segmentation"})
    EXPECT_EQ(r.err.find(bad), std::string::npos) << bad;
  for (const auto& p : c.present) EXPECT_TRUE(fs::exists(dir / p)) << p << " should exist";
  for (const auto& p : c.absent) EXPECT_FALSE(fs::exists(dir / p)) << p << " should not exist";
}

INSTANTIATE_TEST_SUITE_P(
    RuntimeFaults, TrainingSafety,
    ::testing::ValuesIn(std::vector<SafetyCase>{
        {"lr_inf", 1, {"--lr", "inf"}, "--lr (inf) must be a finite number"},
        {"lr_nan", 1, {"--lr", "nan"}, "--lr (nan) must be a finite number"},
        {"eps_inf", 1, {"--eps", "inf"}, "--eps (inf)"},
        {"weight_decay_inf", 1, {"--weight-decay", "inf"}, "--weight-decay (inf)"},
        {"grad_clip_inf", 1, {"--grad-clip", "inf"}, "--grad-clip (inf)"},
        {"beta2_nan", 1, {"--beta2", "nan"}, "--beta2 (nan)"},
        {"min_lr_nan", 1, {"--min-lr", "nan"}, "--min-lr (nan)"},
        {"warmup_negative", 1, {"--warmup-steps", "-1"}, "--warmup-steps (-1) must be >= 0"},
        {"metrics_empty", 1, {"--metrics", ""}, "--metrics: expected a path"},
        {"checkpoint_dir_empty", 1, {"--checkpoint-dir", ""}, "--checkpoint-dir: expected a path"},
        {"loss_diverges_dp2", 2,
         {"--lr", "1e30", "--steps", "4", "--checkpoint-dir", "{dir}/ck", "--checkpoint-every", "1"},
         "training diverged", {}, false, {"ck/step_00000001/manifest.json"}, {"ck/step_00000002"}},
        {"parameters_overflow_dp2", 2,
         {"--lr", "1e39", "--steps", "3", "--checkpoint-dir", "{dir}/ck", "--checkpoint-every", "1"},
         "non-finite parameters", {}, false, {}, {"ck/step_00000001"}},
        // The model in the plan edited after planning (hidden 64 -> 16384: ~217 GiB per
        // rank): the pre-flight recomputes from the model, not the stored prediction.
        {"plan_does_not_fit_memory", 2, {"--steps", "1"}, "fits_memory: false",
         {{"  hidden: 64", "  hidden: 16384"}}},
        // The plan's cluster is gone and its stored prediction says 1.5 GiB: the model
        // (edited to hidden 16384) is recomputed on this host instead of trusted.
        {"plan_cluster_gone_model_grown", 2, {"--steps", "1"}, "fits_memory: false",
         {{"  hidden: 64", "  hidden: 16384"}, {"cluster: local-cpu", "cluster: no-such-cluster"},
          {"peak_memory_gib: 0", "peak_memory_gib: 1.5"}}},
        // Fits an 80 GB A100 (about 70 GiB per rank), not two ranks on a CI host.
        {"plan_over_host_memory", 2, {"--steps", "1"}, "physical memory",
         {{"  hidden: 64", "  hidden: 9216"}, {"cluster: local-cpu", "cluster: dgx-a100"}}},
        // A stored prediction that was never true is replaced, not trusted: this one
        // claims the plan does not fit, the recompute says it does, so training starts and
        // fails at the injected step 2 (proving it got past the pre-flight).
        {"stale_stored_prediction_is_recomputed", 1, {"--steps", "3", "--debug-throw-at-step", "2"},
         "failure injected before step 2",
         {{"fits_memory: true", "fits_memory: false"}}},
        {"fresh_run_into_another_runs_folder", 2, {"--steps", "2", "--checkpoint-dir", "{dir}/ck"},
         "holds the checkpoints of another run", {}, true, {"ck/step_00000001/manifest.json"},
         {"ck/step_00000002"}},
    }),
    [](const auto& info) { return info.param.name; });

TEST(RuntimeFaults, SecondJobOnALockedCheckpointFolderIsRefused) {
  const TempDir dir("safety_lock");
  Layout l;
  l.name = "one";
  const std::string plan = write_plan(l, dir);
  // On a loaded host the first job can finish its steps before the second starts; then both
  // run one after the other and nothing was tested. Such a round is told apart by the first
  // job's end (its last checkpoint) having come before the second job's answer, and run again
  // with ten times the steps. A lock that does not hold fails every round.
  for (const int steps : {120, 1200, 12000}) {
    SCOPED_TRACE(steps);
    const std::string ck = (dir / ("ck" + std::to_string(steps))).string();
    RunResult first;
    std::thread job([&] {
      first = run_strata({"train", "--plan", plan, "--steps", std::to_string(steps), "--checkpoint-dir", ck,
                          "--log-every", "100000"}, 600);
    });
    // Wait until the first job holds the lock (it writes its pid into the lock file).
    const auto lock = fs::path(ck) / ".strata-train.lock";
    for (int i = 0; i < 600 && (!fs::exists(lock) || fs::file_size(lock) == 0); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const RunResult second =
        run_strata({"train", "--plan", plan, "--steps", "2", "--checkpoint-dir", ck, "--resume"}, 60);
    const bool refused = second.exit_code == 2 && second.err.find("is in use by another `strata train` job") !=
                                                     std::string::npos;
    const bool first_was_done = !refused && fs::exists(fs::path(ck) / fmt::format("step_{:08d}", steps));
    job.join();
    EXPECT_EQ(first.exit_code, 0) << "the first job finished: " << first.err;
    EXPECT_TRUE(fs::exists(fs::path(ck) / fmt::format("step_{:08d}", steps) / "manifest.json"));
    if (first_was_done && steps < 12000) continue;
    EXPECT_EQ(second.exit_code, 2) << second.err;
    EXPECT_NE(second.err.find("is in use by another `strata train` job"), std::string::npos) << second.err;
    break;
  }
}

// Property: jobs started at random moments on one --metrics file never interleave. Each job
// either runs (exit 0) or is refused with one error naming the file (exit 2); the file then
// holds whole JSON lines of one run only, steps 1..n of a job that ran.
TEST(RuntimeFaults, ConcurrentJobsOnOneMetricsFileKeepOneRunsWholeLines) {
  const TempDir dir("safety_metrics_race");
  Layout l;
  l.name = "race";
  const std::string plan = write_plan(l, dir);
  const std::string metrics = (dir / "m.jsonl").string();
  std::mt19937 rng(4242);
  for (int trial = 0; trial < 4; ++trial) {
    const int jobs = std::uniform_int_distribution<int>(2, 3)(rng);
    std::vector<int> steps(static_cast<std::size_t>(jobs)), delay_ms(steps.size());
    for (std::size_t j = 0; j < steps.size(); ++j) {
      steps[j] = std::uniform_int_distribution<int>(20, 120)(rng);
      delay_ms[j] = std::uniform_int_distribution<int>(0, 150)(rng);
    }
    std::vector<RunResult> results(steps.size());
    std::vector<std::thread> threads;
    for (std::size_t j = 0; j < steps.size(); ++j)
      threads.emplace_back([&, j] {
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms[j]));
        results[j] = run_strata({"train", "--plan", plan, "--steps", std::to_string(steps[j]), "--metrics", metrics,
                                 "--log-every", "1000"},
                                120);
      });
    for (auto& t : threads) t.join();
    SCOPED_TRACE("trial " + std::to_string(trial));
    std::set<std::int64_t> ran_steps;
    for (std::size_t j = 0; j < results.size(); ++j) {
      const RunResult& r = results[j];
      ASSERT_FALSE(r.timed_out);
      if (r.exit_code == 0) {
        ran_steps.insert(steps[j]);
        continue;
      }
      EXPECT_EQ(r.exit_code, 2) << r.err;
      EXPECT_EQ(count(r.err, "error:"), 1) << r.err;
      EXPECT_NE(r.err.find("is being written by another `strata train` job"), std::string::npos) << r.err;
    }
    ASSERT_FALSE(ran_steps.empty()) << "no job ran";
    std::istringstream in(read_all(metrics));
    std::set<std::string> runs;
    std::int64_t expected = 1;
    for (std::string line; std::getline(in, line); ++expected) {
      const auto j = strata::parse_json(line);  // throws on a broken line
      runs.insert(j.at("run").get<std::string>());
      EXPECT_EQ(j.at("step").get<std::int64_t>(), expected) << line;
    }
    EXPECT_EQ(runs.size(), 1u) << "lines of more than one run";
    EXPECT_EQ(ran_steps.count(expected - 1), 1u) << "the file's " << expected - 1 << " steps are no job's";
  }
}

// A job killed after step 5 whose last checkpoint is step 3: the resumed job's metrics
// continue from step 4, each step once.
TEST_F(Resume, MetricsContinueFromTheCheckpointWithoutDuplicateSteps) {
  ASSERT_EQ(run("m", {"--steps", "5", "--checkpoint-dir", ckpt(), "--checkpoint-every", "3"}).exit_code, 0);
  fs::remove_all(fs::path(ckpt()) / "step_00000005");  // as if killed before that checkpoint
  {
    std::ofstream(dir / "m.jsonl", std::ios::app) << "{\"step\": 6, \"lo";  // a line cut off by the kill
  }
  const RunResult r = run("m", {"--steps", "6", "--checkpoint-dir", ckpt(), "--resume"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("dropped 3 lines after step 3"), std::string::npos) << r.out;
  std::vector<std::int64_t> steps;
  for (const auto& m : metrics("m")) steps.push_back(m.step);
  EXPECT_EQ(steps, (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));
}

}  // namespace
}  // namespace strata::testing
