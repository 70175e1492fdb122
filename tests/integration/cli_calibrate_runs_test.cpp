// `strata calibrate --from-runs / --from-log` and `strata validate --runs` end to end: the
// fitted profile written, read back by --profile, and one `error:` line for each bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/integration/cli_run.h"

namespace fs = std::filesystem;
using strata::testing::run_strata;
using strata::testing::RunResult;

namespace {

const std::string kFixtures = STRATA_FIXTURES;

struct RunsDir {
  fs::path path;
  RunsDir() {
    path = fs::temp_directory_path() / ("strata-calruns-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~RunsDir() { fs::remove_all(path); }
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

void expect_one_error(const RunResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("error:", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

std::string runs_yaml(double scale) {
  std::string y = "source: test rows\ndefaults: {cluster: dgx-h100, stack: mcore-2024, model: llama3-8b}\nruns:\n";
  const int tps[] = {1, 2, 4, 8, 1, 2};
  const int dps[] = {8, 4, 2, 1, 16, 8};
  for (int i = 0; i < 6; ++i)
    y += "  - {id: r" + std::to_string(i) + ", strategy: {tp: " + std::to_string(tps[i]) +
         ", pp: 1, dp: " + std::to_string(dps[i]) + ", micro_batch: 1, global_batch: 64, zero: 1}, measured: "
         "{iteration_s: " + std::to_string(scale * (6.0 + i)) + "}}\n";
  return y;
}

TEST(CliCalibrateRuns, FitsWritesAProfileThatPlanningReads) {
  RunsDir d;
  const std::string runs = d.file("runs.yaml", runs_yaml(1.0));
  const std::string out = (d.path / "fitted.yaml").string();
  const RunResult r = run_strata({"calibrate", "--from-runs", runs, "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("gemm_sustain"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("in-sample (6 rows)"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(out));
  const RunResult v = run_strata({"validate", "--runs", runs, "--profile", out});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("all 6 rows"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("fitted"), std::string::npos) << v.out;
  const RunResult s = run_strata({"simulate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--profile", out,
                                  "--tp", "2", "--dp", "4", "--pp", "1", "--global-batch", "64", "--format", "json"});
  EXPECT_EQ(s.exit_code, 0) << s.err;
}

// The script of job-a.sh with its tensor and pipeline sizes replaced: the fixture logs
// job-b.log (tp 4, pp 1) and job-c.log (tp 1, pp 4) ran the same job on other layouts.
std::string job_script_with(int tp, int pp) {
  std::ifstream in(kFixtures + "/job-a.sh");
  std::string script((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2";
  const auto at = script.find(from);
  EXPECT_NE(at, std::string::npos) << "job-a.sh no longer runs tp 2 x pp 2";
  if (at != std::string::npos)
    script.replace(at, from.size(), "--tensor-model-parallel-size " + std::to_string(tp) +
                                        " --pipeline-model-parallel-size " + std::to_string(pp));
  return script;
}

TEST(CliCalibrateRuns, FromMegatronLogsAndTheirArguments) {
  RunsDir d;
  const std::string out = (d.path / "from-logs.yaml").string();
  const RunResult r = run_strata({"calibrate", "--cluster", "dgx-h100", "--stack", "mcore-2024", "--from-log",
                                  kFixtures + "/job-a.log", kFixtures + "/job-b.log", kFixtures + "/job-c.log",
                                  "--job", kFixtures + "/job-a.sh", d.file("job-b.sh", job_script_with(4, 1)),
                                  d.file("job-c.sh", job_script_with(1, 4)), "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // job-a.log: the median after the warm-up interval of 3905.2, 3911.8, 3899.4 ms.
  EXPECT_NE(r.out.find("3.905"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(out));
}

TEST(CliCalibrateRuns, BadInputIsOneErrorLine) {
  RunsDir d;
  const std::string out = (d.path / "x.yaml").string();
  expect_one_error(run_strata({"calibrate", "--from-runs", d.file("empty.yaml", ""), "--out", out}), "empty");
  expect_one_error(run_strata({"calibrate", "--from-runs", d.file("none.yaml", "runs: []\n"), "--out", out}),
                   "no runs");
  std::string one = runs_yaml(1.0);
  one = one.substr(0, one.find("  - {id: r1"));
  expect_one_error(run_strata({"calibrate", "--from-runs", d.file("one.yaml", one), "--out", out}), "at least 3");
  std::string twice = runs_yaml(1.0) + "  - {id: again, strategy: {tp: 1, pp: 1, dp: 8, micro_batch: 1, "
                                       "global_batch: 64, zero: 1}, measured: {iteration_s: 20}}\n";
  expect_one_error(run_strata({"calibrate", "--from-runs", d.file("twice.yaml", twice), "--out", out}),
                   "contradictory");
  std::string unknown = runs_yaml(1.0);
  unknown.replace(unknown.find("model: llama3-8b"), 16, "model: llama9-1t");
  expect_one_error(run_strata({"calibrate", "--from-runs", d.file("unknown.yaml", unknown), "--out", out}),
                   "llama9-1t");
  expect_one_error(run_strata({"calibrate", "--cluster", "dgx-h100", "--from-log", kFixtures + "/no-timing.log",
                               "--job", kFixtures + "/job-a.sh", "--out", out}),
                   "no step timing");
  expect_one_error(run_strata({"calibrate", "--cluster", "dgx-h100", "--from-log", kFixtures + "/job-a.log", "--out",
                               out}),
                   "pairs");
  expect_one_error(run_strata({"calibrate", "--from-runs", (d.path / "missing.yaml").string(), "--out", out}),
                   "missing.yaml");
  EXPECT_FALSE(fs::exists(out));
}

// `strata simulate --from runs FILE --row ID`: one row as validate --runs predicts it, the
// whole breakdown, and its measured time in a note; the same step time validate prints.
TEST(CliSimulateRunsRow, PredictsTheRowAsValidateDoesAndNamesItsMeasurement) {
  RunsDir d;
  const std::string runs = d.file("runs.yaml", runs_yaml(1.0));
  const RunResult r = run_strata({"simulate", "--from", "runs", runs, "--row", "r2", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto plan = nlohmann::json::parse(r.out);
  EXPECT_EQ(plan["strategy"]["tp"], 4);
  EXPECT_EQ(plan["strategy"]["dp"], 2);
  EXPECT_EQ(plan["model"], "llama3-8b");
  EXPECT_NE(r.out.find("row r2 of"), std::string::npos) << r.out;
  const double step_s = plan["prediction"]["iteration_s"].get<double>();
  EXPECT_NE(r.out.find(fmt::format("measured 8 s, predicted {:.4g} s, {:+.1f} % off; source: test rows",
                                   step_s, 100 * (step_s / 8 - 1))),
            std::string::npos)
      << r.out;
  // validate --runs prints the same prediction for the row.
  const RunResult v = run_strata({"validate", "--runs", runs});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  const double step = plan["prediction"]["iteration_s"].get<double>();
  std::istringstream lines(v.out);
  bool seen = false;
  for (std::string l; std::getline(lines, l);) {
    std::istringstream w(l);
    std::string id, device, stack;
    double gpus = 0, measured = 0, predicted = 0;
    if (w >> id >> device >> stack >> gpus >> measured >> predicted && id == "r2") {
      EXPECT_NEAR(predicted, step, 5e-4 * step) << l;
      seen = true;
    }
  }
  EXPECT_TRUE(seen) << v.out;
}

TEST(CliSimulateRunsRow, BadInputIsOneErrorLine) {
  RunsDir d;
  const std::string runs = d.file("runs.yaml", runs_yaml(1.0));
  expect_one_error(run_strata({"simulate", "--from", "runs", runs}), "r0, r1, r2");
  expect_one_error(run_strata({"simulate", "--from", "runs", runs, "--row", "r9"}), "no such row");
  expect_one_error(run_strata({"simulate", "--from", "runs", runs, "--row", "r1", "--tp", "2"}),
                   "--tp conflicts with --from runs");
  expect_one_error(run_strata({"simulate", "--from", "runs", runs, "--row", "r1", "--model", "llama3-70b"}),
                   "conflict with --from runs");
  expect_one_error(run_strata({"simulate", "--model", "llama3-8b", "--row", "r1"}), "--row needs --from runs");
  expect_one_error(run_strata({"simulate", "--from", "runs", (d.path / "missing.yaml").string(), "--row", "r1"}),
                   "missing.yaml");
}

}  // namespace
