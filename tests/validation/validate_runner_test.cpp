#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "report/report_json.h"
#include "validation/validate_report.h"
#include "validation/validate_runner.h"
#include "common/errors.h"

namespace strata::validation {
namespace {

namespace fs = std::filesystem;

std::string temp_log(const char* name) {
  return (fs::temp_directory_path() / (std::string("strata_validate_test_") + std::to_string(getpid()) + name)).string();
}

TEST(MetricsJsonl, ReadsStepsInOrderAndSkipsBlankLines) {
  const auto m = parse_metrics_jsonl(
      "{\"step\":2,\"loss\":5.1,\"step_s\":0.03,\"tokens_per_s\":100,\"predicted_step_s\":0.02,\"gemm_s\":0.01}\n"
      "\n"
      "{\"step\":1,\"loss\":5.5,\"step_s\":0.5,\"tokens_per_s\":6}\n",
      "m.jsonl");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].step, 1);
  EXPECT_DOUBLE_EQ(m[0].step_s, 0.5);
  EXPECT_DOUBLE_EQ(m[0].predicted_step_s, 0);
  EXPECT_EQ(m[1].step, 2);
  EXPECT_DOUBLE_EQ(m[1].predicted_step_s, 0.02);
  EXPECT_DOUBLE_EQ(m[1].gemm_s, 0.01);
  EXPECT_DOUBLE_EQ(m[0].gemm_s, 0);
}

TEST(MetricsJsonl, NamesTheLineOfABadRecord) {
  try {
    parse_metrics_jsonl("{\"step\":1,\"step_s\":0.1}\n{\"step\":2}\n", "m.jsonl");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("m.jsonl:2: missing \"step_s\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_metrics_jsonl("{not json\n", "m.jsonl"), InputError);
  EXPECT_THROW(parse_metrics_jsonl("[1,2]\n", "m.jsonl"), InputError);
}

TEST(RunProcess, ReportsExitCodeOutputAndEnvironment) {
  const auto log = temp_log("a.log");
  const auto r = run_process({"/bin/sh", "-c", "echo out $STRATA_TEST_VAR; echo 'error: boom' >&2; exit 3"},
                             {{"STRATA_TEST_VAR", "hello"}}, 30, log);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.log.find("out hello"), std::string::npos);
  EXPECT_EQ(first_error_line(r.log), "error: boom");
  fs::remove(log);
}

TEST(RunProcess, KillsTheProcessGroupOnTimeout) {
  const auto log = temp_log("b.log");
  // The child shell starts a grandchild; both must go.
  const auto r = run_process({"/bin/sh", "-c", "sleep 30 & sleep 30; echo never"}, {}, 0.2, log);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
  EXPECT_EQ(r.log.find("never"), std::string::npos);
  fs::remove(log);
}

TEST(RunProcess, ThrowsWhenTheProgramDoesNotExist) {
  const auto log = temp_log("c.log");
  EXPECT_THROW(run_process({"/nonexistent/strata-no-such-binary"}, {}, 5, log), DeviceError);
  fs::remove(log);
}

TEST(FirstErrorLine, PrefersALineMentioningErrorElseTheLast) {
  EXPECT_EQ(first_error_line("a\nb\n  c  \n\n"), "c");
  EXPECT_EQ(first_error_line("start\nMPI_ABORT ERROR here\nerror: later\n"), "MPI_ABORT ERROR here");
  EXPECT_EQ(first_error_line(""), "");
  EXPECT_EQ(first_error_line(std::string(500, 'x')).size(), 200u);
}

PlanRun run(const char* name, double predicted, const char* status, double measured) {
  PlanRun r;
  r.name = name;
  r.predicted_s = predicted;
  r.status = status;
  r.measured_s = measured;
  return r;
}

TEST(ValidateSummary, KeepsFailedPlansOutOfTheErrorButCountsThem) {
  const std::vector<PlanRun> runs{run("a", 1.0, "ok", 1.25), run("b", 2.0, "ok", 2.0), run("c", 0.5, "failed", 0),
                                  run("d", 3.0, "ok", 2.5)};
  const auto s = summarize(runs);
  EXPECT_EQ(s.plans_ok, 3);
  EXPECT_EQ(s.plans_failed, 1);
  EXPECT_NEAR(s.mape_pct, (20.0 + 0.0 + 20.0) / 3, 1e-9);
  EXPECT_NEAR(*s.spearman, 1.0, 1e-12);
  EXPECT_EQ(s.predicted_fastest, 2);  // the failed one: predicted fastest did not run
  EXPECT_EQ(s.measured_fastest, 0);
  EXPECT_FALSE(s.predicted_fastest_is_fastest);
  EXPECT_FALSE(s.predicted_fastest_within_5pct);
  EXPECT_TRUE(std::isnan(s.predicted_fastest_gap_pct));
}

TEST(ValidateSummary, PredictedFastestWithinFivePercent) {
  const std::vector<PlanRun> runs{run("a", 1.0, "ok", 1.04), run("b", 1.1, "ok", 1.0), run("c", 2, "ok", 3)};
  const auto s = summarize(runs);
  EXPECT_EQ(s.predicted_fastest, 0);
  EXPECT_EQ(s.measured_fastest, 1);
  EXPECT_FALSE(s.predicted_fastest_is_fastest);
  EXPECT_NEAR(s.predicted_fastest_gap_pct, 4.0, 1e-9);
  EXPECT_TRUE(s.predicted_fastest_within_5pct);
}

TEST(ValidateTable, ShowsFailedPlansWithTheirExitCode) {
  ValidateReport r;
  r.model = "tiny";
  r.cluster = "local-cpu";
  r.ranks = 2;
  r.runs = {run("a", 1.0, "ok", 1.25), run("b", 0.5, "failed", 0)};
  r.runs[1].exit_code = 134;
  r.runs[1].error = "error: out of memory";
  r.summary = summarize(r.runs);
  const auto t = validate_table(r);
  EXPECT_NE(t.find("failed (exit 134): error: out of memory"), std::string::npos) << t;
  EXPECT_NE(t.find("MAPE: 20.0%"), std::string::npos) << t;
  EXPECT_NE(t.find("predicted fastest (#2) failed to run"), std::string::npos) << t;
}

// The validate JSON that `strata compare --measured` reads back (report/report_json.h).
TEST(MeasuredJson, ReadsWhatValidateWrites) {
  ValidateReport r;
  r.model = "tiny";
  r.cluster = "local-cpu";
  r.ranks = 2;
  r.steps = 10;
  r.warmup = 2;
  PlanRun a;
  a.name = "top 1";
  a.strategy.dp = 2;
  a.strategy.global_batch = 8;
  a.predicted_s = 0.02;
  a.status = "ok";
  a.measured_s = 0.025;
  PlanRun b = a;
  b.name = "baseline tp";
  b.strategy.dp = 1;
  b.strategy.tp = 2;
  b.status = "failed";
  b.exit_code = 1;
  b.error = "error: boom";
  r.runs = {a, b};
  r.summary = summarize(r.runs);
  const auto f = report::parse_measured_json(validate_json(r), "v.json");
  EXPECT_EQ(f.model, "tiny");
  EXPECT_EQ(f.ranks, 2);
  ASSERT_EQ(f.runs.size(), 2u);
  EXPECT_EQ(f.runs[0].strategy, a.strategy);
  EXPECT_EQ(f.runs[0].measured.status, "ok");
  EXPECT_DOUBLE_EQ(f.runs[0].measured.step_s, 0.025);
  EXPECT_EQ(f.runs[1].strategy, b.strategy);
  EXPECT_EQ(f.runs[1].measured.status, "failed");
  EXPECT_EQ(f.runs[1].measured.error, "error: boom");
}

}  // namespace
}  // namespace strata::validation
