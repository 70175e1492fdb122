// `strata validate` end to end through mpirun, with a stand-in for `strata train`
// (a shell script passed as --strata): it fails on tp = 2 plans and writes known step
// times otherwise, so the medians, the failure report and `compare --measured` can be
// checked exactly without the runtime's cost.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <thread>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/integration/cli_run.h"
#include "common/json_text.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ValidateCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata_validate_cmd_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    fake_ = (dir_ / "fake-strata").string();
    std::ofstream(fake_) << R"(#!/bin/sh
# stand-in for `strata train --plan P --steps S --synthetic --metrics M`
[ "$1" = train ] || exit 5
shift
while [ $# -gt 0 ]; do
  case $1 in --metrics) metrics=$2; shift;; --steps) steps=$2; shift;; --plan) plan=$2; shift;; esac
  shift
done
if grep -q '^  tp: 2' "$plan"; then echo "error: stand-in refuses tp 2" >&2; exit 4; fi
[ "${OMPI_COMM_WORLD_RANK:-0}" = 0 ] || exit 0
: > "$metrics"
i=1
while [ $i -le $steps ]; do
  echo "{\"step\":$i,\"loss\":5,\"step_s\":0.0$i,\"tokens_per_s\":1}" >> "$metrics"
  i=$((i + 1))
done
)";
    fs::permissions(fake_, fs::perms::owner_all);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string fake_;
};

TEST_F(ValidateCommand, ReportsFailedPlansAndMediansAfterWarmup) {
  auto r = strata::testing::run_strata({"validate", "--cluster", "local-cpu", "--model", "tiny", "--global-batch",
                                        "64", "--steps", "5", "--warmup", "2", "--top", "2", "--strata", fake_,
                                        "--format", "json"},
                                       300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = strata::parse_json(r.out);
  EXPECT_EQ(j["command"], "validate");
  EXPECT_EQ(j["ranks"], 2);
  const auto& plans = j["plans"];
  ASSERT_GE(plans.size(), 3u);  // top 2 (one may be the dp baseline) + tp + pp baselines
  int failed = 0, ok = 0;
  std::vector<double> pred, meas;
  for (const auto& p : plans) {
    if (p["strategy"]["tp"] == 2) {
      ++failed;
      EXPECT_EQ(p["status"], "failed");
      EXPECT_EQ(p["exit_code"], 4);
      EXPECT_NE(p["error"].get<std::string>().find("stand-in refuses tp 2"), std::string::npos) << p.dump();
      EXPECT_TRUE(p["measured_step_s"].is_null());
    } else {
      ++ok;
      ASSERT_EQ(p["status"], "ok") << p.dump();
      // Steps 0.01 .. 0.05 s; warm-up drops the first two: median of 0.03, 0.04, 0.05.
      EXPECT_NEAR(p["measured_step_s"].get<double>(), 0.04, 1e-12);
      EXPECT_EQ(p["step_times_s"].size(), 5u);
      pred.push_back(p["predicted_step_s"].get<double>());
      meas.push_back(0.04);
    }
  }
  EXPECT_EQ(failed, 1);
  const auto& s = j["summary"];
  EXPECT_EQ(s["plans_failed"], 1);
  EXPECT_EQ(s["plans_ok"], ok);
  double mape = 0;
  for (std::size_t i = 0; i < pred.size(); ++i) mape += std::fabs(pred[i] - 0.04) / 0.04 * 100;
  EXPECT_NEAR(s["mape_pct"].get<double>(), mape / pred.size(), 1e-9);
  EXPECT_TRUE(s["spearman"].is_null());  // all measured equal: correlation undefined

  // compare --measured takes the measured plans and shows both columns.
  const std::string vpath = (dir_ / "v.json").string();
  std::ofstream(vpath) << r.out;
  auto c = strata::testing::run_strata(
      {"compare", "--model", "tiny", "--cluster", "local-cpu", "--measured", vpath, "--format", "md"}, 120);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("| measured | error |"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("| 40 ms |"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("| failed |"), std::string::npos) << c.out;

  // Each plan names the model it ran; one that ran another model is left out, by name.
  for (const auto& p : plans) EXPECT_EQ(p["model"], "tiny") << p.dump();
  json other = j;
  other["plans"][0]["model"] = "gpt2-124m";
  std::ofstream(vpath, std::ios::trunc) << other.dump();
  auto o = strata::testing::run_strata(
      {"compare", "--model", "tiny", "--cluster", "local-cpu", "--measured", vpath, "--format", "md"}, 120);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("ran model gpt2-124m, not tiny: left out"), std::string::npos) << o.err;
}

TEST_F(ValidateCommand, RepeatPoolsTheStepsOfEveryRun) {
  auto r = strata::testing::run_strata({"validate", "--model", "tiny", "--global-batch", "64", "--steps", "4",
                                        "--warmup", "1", "--top", "1", "--repeat", "2", "--strata", fake_,
                                        "--format", "json"},
                                       300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = strata::parse_json(r.out);
  EXPECT_EQ(j["repeat"], 2);
  for (const auto& p : j["plans"]) {
    if (p["status"] != "ok") continue;
    EXPECT_EQ(p["step_times_s"].size(), 8u);  // 2 runs x 4 steps
    // Each run: 0.01 (warm-up) then 0.02 0.03 0.04; pooled median of 0.02..0.04 twice = 0.03.
    EXPECT_NEAR(p["measured_step_s"].get<double>(), 0.03, 1e-12);
  }
  EXPECT_NE(r.err.find("round 2/2"), std::string::npos) << r.err;
}

// --recalibrate: before each round the stand-in "calibrates" (it records its arguments
// and writes a profile whose tiny blocks take 1 s, then 2 s, per micro-batch), and each
// round is predicted from that round's profile.
// Open MPI's session directory goes into the run's own folder, so MPI jobs started beside it on
// the same node cannot race its creation (open-mpi/ompi#8510); mpirun itself still runs.
TEST_F(ValidateCommand, MpirunKeepsItsSessionDirectoryInTheRunsFolder) {
  const std::string seen = (dir_ / "tmpdir-base").string(), keep = (dir_ / "keep").string();
  const std::string fake = (dir_ / "fake-recording").string();
  std::ofstream(fake) << "#!/bin/sh\n"
                         "[ \"${OMPI_COMM_WORLD_RANK:-0}\" = 0 ] && echo \"$OMPI_MCA_orte_tmpdir_base\" > " << seen << "\n"
                         "exec " << fake_ << " \"$@\"\n";
  fs::permissions(fake, fs::perms::owner_all);
  auto r = strata::testing::run_strata({"validate", "--cluster", "local-cpu", "--model", "tiny", "--global-batch",
                                        "64", "--steps", "3", "--warmup", "1", "--plans", "top", "--top", "1",
                                        "--strata", fake, "--keep-dir", keep, "--format", "json"},
                                       300, "", {"OMPI_MCA_orte_tmpdir_base="});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(seen);
  std::string base;
  std::getline(in, base);
  EXPECT_EQ(fs::path(base), fs::absolute(keep)) << r.err;
}

TEST_F(ValidateCommand, RecalibratePredictsEachRoundFromAFreshProfile) {
  const std::string args_log = (dir_ / "calibrate-args").string(), count = (dir_ / "rounds").string();
  const std::string fake = (dir_ / "fake-with-calibrate").string();
  std::ofstream(fake) << "#!/bin/sh\n"
                         "if [ \"$1\" = calibrate ]; then\n"
                         "  [ \"${OMPI_COMM_WORLD_RANK:-0}\" = 0 ] || exit 0\n"
                         "  echo \"$@\" >> " << args_log << "\n"
                         "  echo x >> " << count << "\n"
                         "  n=$(wc -l < " << count << ")\n"
                         "  while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=$2; shift; done\n"
                         "  cat > \"$out\" <<EOF\n"
                         "name: stand-in\n"
                         "source: {kind: measured, tool: stand-in}\n"
                         "compute_dtype: fp32\n"
                         "memory_gib: 11\n"
                         "memory_bandwidth_gbps: 10\n"
                         "peak_tflops: {fp32: 0.1}\n"
                         "block_table:\n"
                         "  source: {kind: measured, tool: stand-in}\n"
                         "  rows:\n"
                         "    - {block: \"hidden 64, heads 4, kv_heads 4, ffn 256, seq 32, layernorm, gelu, learned\", "
                         "tp: 1, sp: false, micro_batch: 1, fwd_us: ${n}00000, bwd_us: ${n}00000}\n"
                         "EOF\n"
                         "  exit 0\n"
                         "fi\n"
                         "exec " << fake_ << " \"$@\"\n";
  fs::permissions(fake, fs::perms::owner_all);
  auto r = strata::testing::run_strata({"validate", "--cluster", "local-cpu", "--model", "tiny", "--global-batch",
                                        "64", "--steps", "3", "--warmup", "1", "--top", "1", "--repeat", "2",
                                        "--recalibrate", "--strata", fake, "--format", "json"},
                                       300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(args_log);
  const std::string calls((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(std::count(calls.begin(), calls.end(), '\n'), 2) << calls;
  for (const char* a : {"--backend cpu", "--quick", "--model tiny", "--tp-degrees 1,2", "--micro-batch"})
    EXPECT_NE(calls.find(a), std::string::npos) << a << " in " << calls;
  const json j = strata::parse_json(r.out);
  EXPECT_EQ(j["recalibrated"], true);
  bool saw_dp = false;
  for (const auto& p : j["plans"]) {
    if (p["strategy"]["dp"] != 2) continue;
    saw_dp = true;
    // 4 blocks x 32 sequences per rank x (fwd + bwd) of 0.1 s (round 1) or 0.2 s (round 2)
    // per sequence, plus the embedding, head and optimizer from the stand-in's roofline.
    const auto rounds = p["round_predicted_s"].get<std::vector<double>>();
    ASSERT_EQ(rounds.size(), 2u) << p.dump();
    EXPECT_NEAR(rounds[1] - rounds[0], 4 * 32 * 0.2, 1e-3) << p.dump();
    EXPECT_GT(rounds[0], 4 * 32 * 0.2);
    EXPECT_NEAR(p["predicted_step_s"].get<double>(), (rounds[0] + rounds[1]) / 2, 1e-9);
  }
  EXPECT_TRUE(saw_dp);
  // The profile is measured at the model's own sequence length.
  r = strata::testing::run_strata({"validate", "--model", "tiny", "--seq", "16", "--recalibrate", "--strata", fake}, 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--seq"), std::string::npos) << r.err;
}

TEST_F(ValidateCommand, RejectsTooFewStepsForTheWarmup) {
  auto r = strata::testing::run_strata({"validate", "--steps", "2", "--warmup", "2", "--strata", fake_}, 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--steps (2) must be greater than --warmup (2)"), std::string::npos) << r.err;
}

// A SIGTERM (or Ctrl-C) to validate ends the job it is running, children included (they
// run in their own process group, which a terminal's signal does not reach), removes the
// temporary folder and exits 128 + 15 with one error line. The stand-in mpirun starts a
// long child, then signals validate (its parent) itself.
// Whether the process whose pid a fake mpirun wrote to `pid_file` ends within `tries` x 20 ms
// (killed here when it does not, so that no test leaves it behind).
bool child_ends(const fs::path& pid_file, int tries) {
  for (int i = 0; i < 100 && !fs::exists(pid_file); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!fs::exists(pid_file)) return false;
  const pid_t child = std::stoi(strata::testing::read_all(pid_file.string()));
  for (int i = 0; i < tries; ++i) {
    if (::kill(child, 0) != 0 && errno == ESRCH) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(child, SIGKILL);
  return false;
}

TEST_F(ValidateCommand, ASignalEndsTheRunningJobAndRemovesTheTemporaryFolder) {
  const fs::path tmp = dir_ / "tmp";
  fs::create_directories(tmp);
  const std::string mpirun = (dir_ / "fake-mpirun").string();
  const fs::path child_pid = dir_ / "child.pid";
  std::ofstream(mpirun) << "#!/bin/sh\nsleep 300 &\necho $! > " << child_pid.string()
                        << "\nkill -TERM $PPID\nwait\n";
  fs::permissions(mpirun, fs::perms::owner_all);
  const auto r = strata::testing::run_strata({"validate", "--model", "tiny", "--global-batch", "64", "--steps", "3",
                                              "--top", "1", "--mpirun", mpirun, "--strata", fake_},
                                             120, "", {"TMPDIR=" + tmp.string()});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  ASSERT_EQ(r.error_lines().size(), 1u) << r.err;
  EXPECT_NE(r.error_lines()[0].find("stopped by SIGTERM"), std::string::npos) << r.err;
  EXPECT_TRUE(child_ends(child_pid, 100)) << "the job's child outlived validate";
  EXPECT_TRUE(fs::is_empty(tmp)) << "the temporary folder was left in " << tmp;
}

// SIGKILL reaches no handler: the job (here a fake mpirun with a child of its own) learns of
// strata's death from the kernel (PR_SET_PDEATHSIG) and ends its child.
TEST_F(ValidateCommand, TheJobDiesWithAKilledValidate) {
  const std::string mpirun = (dir_ / "fake-mpirun-kill").string();
  const fs::path child_pid = dir_ / "child-kill.pid";
  std::ofstream(mpirun) << "#!/bin/sh\nsleep 300 &\nchild=$!\ntrap 'kill $child; exit 143' TERM\necho $child > "
                        << child_pid.string() << "\nkill -KILL $PPID\nwait\n";
  fs::permissions(mpirun, fs::perms::owner_all);
  const auto r = strata::testing::run_strata({"validate", "--model", "tiny", "--global-batch", "64", "--steps", "3",
                                              "--top", "1", "--mpirun", mpirun, "--strata", fake_},
                                             120);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL) << r.err;
  EXPECT_TRUE(child_ends(child_pid, 150)) << "the job's child outlived a killed validate";
}

}  // namespace
