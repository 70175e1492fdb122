// From a question to a launched job, through the built binary: time to train on plan,
// simulate and compare; every parallel dimension in compare's strategies file and outputs;
// compare's report format from the --report extension.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/integration/cli_run.h"

namespace fs = std::filesystem;
using nlohmann::json;
using strata::testing::read_all;
using strata::testing::run_strata;

namespace {

class CliJob : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("strata_cli_job_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

TEST_F(CliJob, PlanJsonGivesEachPlanItsTimeToTrain) {
  auto r = run_strata({"plan", "--model", "gpt2-124m", "--cluster", "dgx-a100", "--gpus", "8",
                       "--top", "3", "--format", "json", "--train-tokens", "10B", "--goodput",
                       "0.9", "--gpu-hour-price", "2.5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_FALSE(j["plans"].empty());
  const std::int64_t seq = j["seq_len"];
  for (const auto& p : j["plans"]) {
    const auto& t = p["time_to_train"];
    const std::int64_t gb = p["strategy"]["global_batch"];
    EXPECT_EQ(t["tokens"], 10'000'000'000);
    EXPECT_EQ(t["steps"], ceil_div(10'000'000'000, gb * seq));
    const double step = p["prediction"]["iteration_s"];
    const double wall = t["steps"].get<double>() * step / 0.9;
    EXPECT_NEAR(t["wall_s"]["value"].get<double>(), wall, 1e-9 * wall);
    EXPECT_NEAR(t["gpu_hours"]["value"].get<double>(), wall * 8 / 3600, 1e-9 * wall);
    EXPECT_NEAR(t["cost_usd"]["value"].get<double>(), wall * 8 / 3600 * 2.5, 1e-9 * wall);
    // The range brackets the point and comes from the prediction's band.
    EXPECT_LE(t["wall_days"]["low"].get<double>(), t["wall_days"]["value"].get<double>());
    EXPECT_GE(t["wall_days"]["high"].get<double>(), t["wall_days"]["value"].get<double>());
    if (!p["prediction"]["uncertainty"].is_null()) {
      EXPECT_TRUE(t["banded"].get<bool>());
      const double low_s = p["prediction"]["uncertainty"]["low_s"];
      EXPECT_NEAR(t["wall_s"]["low"].get<double>(), t["steps"].get<double>() * low_s / 0.9,
                  1e-9 * wall);
    }
  }
}

TEST_F(CliJob, PlanAndSimulateTablesShowTimeToTrainWithItsRange) {
  auto plan = run_strata({"plan", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus",
                          "256", "--global-batch", "1024", "--seq", "8192", "--top", "3",
                          "--train-tokens", "15T", "--gpu-hour-price", "2"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("days"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("GPU-hours"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("# time to train #1: 15T tokens = "), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("at $2/GPU-hour"), std::string::npos) << plan.out;

  auto sim = run_strata({"simulate", "--model", "llama3-70b", "--cluster", "dgx-h100", "--tp",
                         "8", "--pp", "4", "--dp", "8", "--global-batch", "1024", "--seq", "8192",
                         "--sequence-parallel", "--train-tokens", "15T", "--format", "json"});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const json j = json::parse(sim.out);
  const auto& t = j["time_to_train"];
  EXPECT_EQ(t["steps"], ceil_div(15'000'000'000'000, 1024 * 8192));
  EXPECT_TRUE(t["cost_usd"].is_null());  // no price
  // H100 runs under its validated default stack: a band, so a real range.
  ASSERT_FALSE(j["prediction"]["uncertainty"].is_null()) << sim.out;
  EXPECT_TRUE(t["banded"].get<bool>());
  EXPECT_LT(t["wall_days"]["low"].get<double>(), t["wall_days"]["high"].get<double>());

  auto table = run_strata({"simulate", "--model", "llama3-70b", "--cluster", "dgx-h100", "--tp",
                           "8", "--pp", "4", "--dp", "8", "--global-batch", "1024", "--seq", "8192",
                           "--sequence-parallel", "--train-tokens", "15T"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("train steps (15T tokens)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("time to train"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(" days ("), std::string::npos) << "the range next to the days\n" << table.out;
}

TEST_F(CliJob, CompareTakesExpertAndContextParallelLayoutsAndShowsThem) {
  const std::string s = path("s.yaml");
  std::ofstream(s) << "strategies:\n"
                      "  - {ep: 8, zero: 1}\n"
                      "  - {tp: 2, ep: 4, sequence_parallel: true, zero: 1}\n"
                      "  - {tp: 2, pp: 2, ep: 8, sequence_parallel: true, zero: 1}\n";
  auto md = run_strata({"compare", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--gpus",
                        "64", "--global-batch", "256", "--strategies", s, "--format", "md",
                        "--train-tokens", "1T"});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| ep | etp |"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("EP comm (all-to-all)"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("| days | GPU-hours |"), std::string::npos) << md.out;

  const std::string out = path("r.json");
  auto js = run_strata({"compare", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--gpus",
                        "64", "--global-batch", "256", "--strategies", s, "--report", out});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const json j = json::parse(read_all(out));  // the .json extension chose JSON
  ASSERT_EQ(j["strategies"].size(), 3u);
  EXPECT_EQ(j["strategies"][0]["label"], "tp1 pp1 dp64 ep8 · mbs 1 · zero 1");
  EXPECT_EQ(j["strategies"][0]["strategy"]["ep"], 8);
  EXPECT_GT(j["strategies"][0]["prediction"]["breakdown_s"]["ep_comm"].get<double>(), 0);

  const std::string html = path("r.html");
  auto h = run_strata({"compare", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--gpus",
                       "64", "--global-batch", "256", "--strategies", s, "--report", html});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  const std::string page = read_all(html);
  EXPECT_NE(page.find("EP comm (all-to-all)"), std::string::npos);
  EXPECT_NE(page.find("#1 tp1 pp1 dp64 ep8"), std::string::npos);

  // cp in the strategies file (a dense model: MoE with cp is not modelled).
  std::ofstream(path("cp.yaml")) << "strategies:\n  - {tp: 2, cp: 2, pp: 2}\n  - {tp: 8}\n";
  auto cp = run_strata({"compare", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus",
                        "16", "--global-batch", "64", "--strategies", path("cp.yaml"),
                        "--format", "json"});
  ASSERT_EQ(cp.exit_code, 0) << cp.err;
  const json c = json::parse(cp.out);
  EXPECT_EQ(c["strategies"][0]["strategy"]["cp"], 2);
  EXPECT_EQ(c["strategies"][0]["strategy"]["dp"], 2);
  // The exposed K/V exchange may be fully hidden behind attention (0 s): the key is there.
  EXPECT_TRUE(c["strategies"][0]["prediction"]["breakdown_s"].contains("cp_comm"));
  EXPECT_EQ(c["strategies"][0]["label"], "tp2 pp2 dp2 cp2 · mbs 1 · 1f1b");
  auto cpmd = run_strata({"compare", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus",
                          "16", "--global-batch", "64", "--strategies", path("cp.yaml")});
  ASSERT_EQ(cpmd.exit_code, 0) << cpmd.err;
  EXPECT_NE(cpmd.out.find("| CP comm |"), std::string::npos) << cpmd.out;
}

TEST_F(CliJob, CompareReportFormatFollowsTheExtension) {
  const std::string md = path("x.md");
  auto r = run_strata({"compare", "--model", "gpt2-124m", "--cluster", "dgx-a100", "--gpus", "8",
                       "--top", "2", "--report", md});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = read_all(md);
  EXPECT_EQ(text.rfind("### strata compare", 0), 0u) << text.substr(0, 200);
  EXPECT_EQ(text.find("<html"), std::string::npos);

  // Upper case and .markdown too.
  auto up = run_strata({"compare", "--model", "gpt2-124m", "--cluster", "dgx-a100", "--gpus", "8",
                        "--top", "2", "--report", path("X.MARKDOWN")});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_EQ(read_all(path("X.MARKDOWN")).rfind("### strata compare", 0), 0u);

  // A --format that contradicts the extension: one error, nothing written.
  auto bad = run_strata({"compare", "--model", "gpt2-124m", "--cluster", "dgx-a100", "--gpus",
                         "8", "--top", "2", "--format", "html", "--report", path("y.md")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("error: --report"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("Markdown"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("--format md"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(path("y.md")));

  // Other extensions keep the HTML default.
  auto other = run_strata({"compare", "--model", "gpt2-124m", "--cluster", "dgx-a100", "--gpus",
                           "8", "--top", "2", "--report", path("z.out")});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(read_all(path("z.out")).find("<!DOCTYPE html>"), std::string::npos);
}

}  // namespace

namespace {

// A plan file written under a fitted profile (its breakdown has a straggler term) reads
// back: export and train take it (it was refused as "unknown key straggler").
TEST_F(CliJob, PlanFileWithAStragglerTermReadsBack) {
  const std::string p = path("p.yaml");
  auto w = run_strata({"simulate", "--model", "tiny", "--cluster", "dgx-a100", "--tp", "2", "--pp",
                       "2", "--dp", "1", "--global-batch", "8", "--out", p});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ASSERT_NE(read_all(p).find("straggler:"), std::string::npos) << read_all(p);
  auto e = run_strata({"export", "--plan", p, "--to", "megatron", "--out", path("args.sh")});
  EXPECT_EQ(e.exit_code, 0) << e.err;
}

}  // namespace
