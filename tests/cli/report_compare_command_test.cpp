// `strata compare` through the binary: formats, and bad input as one `error:` line + exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/integration/cli_run.h"
#include "common/json_text.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using strata::testing::run_strata;

class CompareCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata_compare_cmd_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const auto p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  fs::path dir_;
};

void expect_input_error(const strata::testing::RunResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST_F(CompareCommand, JsonHasTheTopKStrategiesBestFirst) {
  auto r = run_strata({"compare", "--model", "gpt2-124m", "--cluster", "dgx-a100", "--gpus", "16", "--top", "3",
                       "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = strata::parse_json(r.out);
  ASSERT_EQ(j["strategies"].size(), 3u);
  EXPECT_EQ(j["best_index"], 1);
  double prev = 0;
  for (const auto& s : j["strategies"]) {
    EXPECT_EQ(s["strategy"]["dp"].get<int>() * s["strategy"]["tp"].get<int>() * s["strategy"]["pp"].get<int>(), 16);
    const double t = s["prediction"]["iteration_s"].get<double>();
    EXPECT_GE(t, prev);  // the planner's order
    prev = t;
  }
  EXPECT_FALSE(j["strategies"][0]["timeline"].empty());  // the best one's Gantt data
}

TEST_F(CompareCommand, StrategiesFileKeepsItsOrderAndWritesTheReportFile) {
  const auto s = write("s.yaml", "strategies:\n  - {tp: 2, pp: 2}\n  - {tp: 1, pp: 1}\n  - {tp: 4, pp: 4, dp: 1}\n");
  const auto out = (dir_ / "r.html").string();
  auto r = run_strata({"compare", "--model", "gpt2-124m", "--cluster", "dgx-a100", "--gpus", "16", "--global-batch",
                       "64", "--strategies", s, "--report", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  const std::string html = strata::testing::read_all(out);
  EXPECT_NE(html.find("<td>2</td><td>2</td><td>4</td>"), std::string::npos);  // tp pp dp of row 1
  EXPECT_LT(html.find("<td title=\"tp2 pp2 dp4"), html.find("<td title=\"tp1 pp1 dp16"));
}

// The report names the command that wrote it; run by a shell from the same directory it
// writes the same report, even with a space and a quote in a path.
TEST_F(CompareCommand, ReportCarriesTheCommandThatReproducesIt) {
  const auto s = write("my layout's.yaml", "strategies:\n  - {tp: 2, pp: 2}\n  - {tp: 1, pp: 1}\n");
  auto r = run_strata({"compare", "--model", "gpt2-124m", "--cluster", "dgx-a100", "--gpus", "16", "--global-batch",
                       "64", "--strategies", s, "--gantt", "none", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string command = strata::parse_json(r.out)["command_line"].get<std::string>();
  EXPECT_EQ(command, "strata compare --model gpt2-124m --cluster dgx-a100 --gpus 16 --global-batch 64 --strategies '" +
                         dir_.string() + "/my layout'\\''s.yaml' --gantt none --format json");
  const char* path = std::getenv("PATH");
  const auto again = strata::testing::run_program(
      "/bin/bash", {"-c", command}, 120, dir_.string(),
      {"PATH=" + fs::path(STRATA_EXE).parent_path().string() + ":" + (path != nullptr ? path : "/usr/bin:/bin")});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, r.out);
}

TEST_F(CompareCommand, BadInputIsOneErrorLine) {
  const auto unknown = write("u.yaml", "strategies:\n  - {tp: 2, ppp: 2}\n");
  expect_input_error(run_strata({"compare", "--model", "gpt2-124m", "--cluster", "dgx-a100", "--gpus", "16",
                                 "--strategies", unknown}),
                     "ppp");
  const auto heads = write("h.yaml", "strategies:\n  - {tp: 5, pp: 1}\n");
  expect_input_error(run_strata({"compare", "--model", "gpt2-124m", "--cluster", "dgx-a100", "--gpus", "10",
                                 "--strategies", heads}),
                     "strategy 1");
  expect_input_error(run_strata({"compare", "--model", "gpt2-124m", "--cluster", "dgx-a100", "--gpus", "16",
                                 "--top", "2", "--strategies", heads}),
                     "excludes");
  expect_input_error(run_strata({"compare", "--model", "gpt2-124m", "--cluster", "dgx-a100", "--gpus", "16",
                                 "--report", (dir_ / "missing" / "r.html").string()}),
                     "--report");
  expect_input_error(run_strata({"compare", "--model", "gpt2-124m", "--cluster", "dgx-a100", "--measured",
                                 write("m.json", "{\"command\": \"plan\"}")}),
                     "strata validate");
  expect_input_error(run_strata({"compare", "--format", "pdf"}), "--format");
}

}  // namespace
