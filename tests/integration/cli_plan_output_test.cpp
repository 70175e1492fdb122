// `strata plan` output options through the binary: --format csv lists every candidate that
// fits, --memory-headroom keeps plans that leave room free, and their bad values are one
// `error:` line each.
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/json_text.h"
#include "tests/integration/cli_run.h"

namespace {

using strata::testing::run_strata;
using strata::testing::RunResult;

const std::vector<std::string> kPlanGpt2 = {"plan", "--model", "gpt2-124m", "--cluster", "dgx-a100", "--gpus", "16"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::size_t lines(const std::string& s) {
  std::size_t n = 0;
  for (const char c : s) n += c == '\n';
  return n;
}

TEST(PlanCsv, ListsEveryCandidateThatFitsUnlessTopLimitsIt) {
  const RunResult all = run_strata(with(kPlanGpt2, {"--format", "csv"}));
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out.rfind("rank,tp,pp,dp,", 0), 0u) << all.out;
  EXPECT_GT(lines(all.out), 11u);  // more than the table's default top 10
  const RunResult three = run_strata(with(kPlanGpt2, {"--format", "csv", "--top", "3"}));
  ASSERT_EQ(three.exit_code, 0) << three.err;
  EXPECT_EQ(lines(three.out), 4u);
  // Same ranking: the first rows agree.
  EXPECT_EQ(all.out.substr(0, three.out.size()), three.out);
}

TEST(PlanMemoryHeadroom, KeepsOnlyPlansThatLeaveItFree) {
  // llama2-7b on 8 A100s: the best plans without headroom use most of the 80 GiB.
  const std::vector<std::string> base = {"plan", "--model", "llama2-7b", "--cluster", "dgx-a100", "--gpus", "8",
                                         "--format", "csv"};
  const double limit_gib = 80 - 30;  // 30 GiB headroom
  const RunResult r = run_strata(with(base, {"--memory-headroom", "30"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  std::string line;
  std::getline(in, line);  // header
  std::size_t rows = 0;
  for (; std::getline(in, line); ++rows) {
    std::vector<std::string> f;
    std::istringstream cells(line);
    for (std::string c; std::getline(cells, c, ',');) f.push_back(c);
    ASSERT_GT(f.size(), 21u);
    EXPECT_LE(std::stod(f[21]), limit_gib) << line;  // peak_memory_gib
  }
  EXPECT_GT(rows, 0u);
  const RunResult pct = run_strata(with(base, {"--memory-headroom", "37.5%"}));  // 30 GiB of 80
  ASSERT_EQ(pct.exit_code, 0) << pct.err;
  EXPECT_EQ(pct.out, r.out);
  const RunResult table = run_strata({"plan", "--model", "llama2-7b", "--cluster", "dgx-a100", "--gpus", "8",
                                      "--memory-headroom", "4GiB"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("4 GiB kept free by --memory-headroom"), std::string::npos) << table.out;
  // By default 5% is kept free (4 GiB of 80), so no plan of the table is tight; 0 plans up to
  // the workspace reserve and says nothing of headroom.
  const std::vector<std::string> llama = {"plan", "--model", "llama2-7b", "--cluster", "dgx-a100", "--gpus", "8"};
  const RunResult dflt = run_strata(llama);
  ASSERT_EQ(dflt.exit_code, 0) << dflt.err;
  const auto untimed = [](const std::string& out) {
    return std::regex_replace(out, std::regex(R"(in [0-9.]+ s:)"), "in T s:");
  };
  EXPECT_EQ(untimed(dflt.out), untimed(table.out));
  EXPECT_EQ(dflt.out.find(" tight"), std::string::npos) << dflt.out;
  const RunResult edge = run_strata(with(llama, {"--memory-headroom", "0"}));
  ASSERT_EQ(edge.exit_code, 0) << edge.err;
  EXPECT_EQ(edge.out.find("kept free"), std::string::npos) << edge.out;
}

TEST(PlanMemoryHeadroom, BadValuesAreOneErrorLine) {
  for (const char* bad : {"five", "-1", "100%", "5%%", "", "4 TiB", "78"}) {
    SCOPED_TRACE(bad);
    const RunResult r = run_strata(with(kPlanGpt2, {"--memory-headroom", bad}));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    ASSERT_EQ(r.error_lines().size(), 1u) << r.err;
    EXPECT_NE(r.error_lines()[0].find("--memory-headroom"), std::string::npos) << r.err;
  }
}

// --gpus with a list: one search per count; each row is that count's best plan, the
// same as planning the count alone (the first rank of its table).
TEST(PlanScaling, EachCountsRowIsThatCountsBestPlan) {
  const std::vector<std::string> base = {"plan", "--model", "gpt2-124m", "--cluster", "dgx-a100"};
  const RunResult r = run_strata(with(base, {"--gpus", "8,16", "--format", "json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const std::string n : {"8", "16"}) {
    SCOPED_TRACE(n);
    const RunResult one = run_strata(with(base, {"--gpus", n, "--out", "-", "--format", "json"}));
    ASSERT_EQ(one.exit_code, 0) << one.err;
    // The single plan's iteration_s appears in the list's JSON for that count.
    const std::string key = "\"iteration_s\": ";
    const auto at = one.out.find(key);
    ASSERT_NE(at, std::string::npos) << one.out;
    const std::string value = one.out.substr(at + key.size(), one.out.find_first_of(",\n", at + key.size()) - at - key.size());
    EXPECT_NE(r.out.find("\"gpus\": " + n), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(key + value), std::string::npos) << value << "\n" << r.out;
  }
  const RunResult table = run_strata(with(base, {"--gpus", "8,16", "--train-tokens", "1B"}));
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("8 -> 16 GPUs (2x the GPUs) keeps"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("GPU-hours"), std::string::npos) << table.out;
}

TEST(PlanScaling, BadListsAndFlagsThatTakeOneCountAreOneErrorLine) {
  const std::vector<std::string> base = {"plan", "--model", "gpt2-124m", "--cluster", "dgx-a100"};
  for (const auto& extra : std::vector<std::vector<std::string>>{{"--gpus", "8,,16"},
                                                                  {"--gpus", "8,8"},
                                                                  {"--gpus", "8,x"},
                                                                  {"--gpus", "8,16", "--out", "p.yaml"},
                                                                  {"--gpus", "8,16", "--format", "csv"},
                                                                  {"--gpus", "8", "--report", "r.html"}}) {
    SCOPED_TRACE(extra.back());
    const RunResult r = run_strata(with(base, extra));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.error_lines().size(), 1u) << r.err;
  }
}

TEST(PlanFront, ListsOnlyPlansNoOtherBeatsOnTimeAndMemory) {
  const RunResult r = run_strata(with(kPlanGpt2, {"--front"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto at = r.out.find("# step time vs memory: the ");
  ASSERT_NE(at, std::string::npos) << r.out;
  // The front's last row is the fastest plan: "+0.0%" slower than itself.
  EXPECT_NE(r.out.find("+0.0%", at), std::string::npos) << r.out;
}

}  // namespace

// Property (silent wrong answers): for random commands, formats and --out -, what comes out
// on stdout is the format asked for, or the run is refused with one error line; never one
// format under another's name (`--out - --format csv` once printed the YAML plan file).
TEST(OutputFormatProperty, StdoutIsTheFormatAskedForOrOneError) {
  struct Command {
    std::vector<std::string> args;
    std::vector<std::string> formats;  // the --format values the command takes, its default first
    bool plan_file = false;            // takes --out - (the plan file on stdout)
  };
  const std::vector<Command> commands = {
      {{"plan", "--model", "tiny", "--cluster", "dgx-a100", "--gpus", "8", "--global-batch", "16"},
       {"table", "json", "yaml", "csv"}, true},
      {{"simulate", "--model", "tiny", "--cluster", "dgx-a100", "--tp", "1", "--pp", "2", "--dp", "4",
        "--global-batch", "16"},
       {"table", "json", "yaml"}, true},
      {{"compare", "--model", "tiny", "--cluster", "dgx-a100", "--gpus", "8", "--global-batch", "16", "--top", "2",
        "--report", "-"},
       {"md", "html", "json"}, false},  // md first: the default on stdout
      {{"models", "show", "tiny"}, {"yaml", "json"}, false},
  };
  const auto starts_json = [](const std::string& s) { return !s.empty() && (s[0] == '{' || s[0] == '['); };
  std::mt19937 rng(9090);
  for (int trial = 0; trial < 40; ++trial) {
    const Command& c = commands[std::uniform_int_distribution<std::size_t>(0, commands.size() - 1)(rng)];
    std::vector<std::string> args = c.args;
    const int pick = std::uniform_int_distribution<int>(-1, static_cast<int>(c.formats.size()) - 1)(rng);
    const std::string format = pick < 0 ? "" : c.formats[static_cast<std::size_t>(pick)];
    if (!format.empty()) args.insert(args.end(), {"--format", format});
    const bool out_dash = c.plan_file && std::uniform_int_distribution<int>(0, 1)(rng) == 1;
    if (out_dash) args.insert(args.end(), {"--out", "-"});
    const RunResult r = run_strata(args);
    SCOPED_TRACE(::testing::PrintToString(args) + "\nstderr:\n" + r.err);
    if (r.exit_code == 2) {
      EXPECT_EQ(r.error_lines().size(), 1u);
      EXPECT_TRUE(out_dash && (format == "table" || format == "csv")) << "refused a valid request";
      continue;
    }
    ASSERT_EQ(r.exit_code, 0);
    const std::string& out = r.out;
    // What the request means: the plan file (--out -) is YAML unless --format json.
    const std::string asked = out_dash ? (format == "json" ? "json" : "yaml")
                              : format.empty() ? c.formats.front()
                                               : format;
    EXPECT_FALSE(out_dash && (format == "table" || format == "csv")) << "answered a contradictory request";
    if (asked == "json") {
      EXPECT_NO_THROW((void)strata::parse_json(out));
    } else if (asked == "yaml") {
      EXPECT_FALSE(starts_json(out));
      EXPECT_NO_THROW((void)YAML::Load(out));
    } else if (asked == "csv") {
      EXPECT_EQ(out.rfind("rank,tp,pp,", 0), 0u) << out.substr(0, 80);
    } else if (asked == "table") {
      EXPECT_FALSE(starts_json(out));
      EXPECT_EQ(out.find("schema_version:"), std::string::npos) << "a plan file, not a table";
    } else if (asked == "html") {
      EXPECT_NE(out.find("<html"), std::string::npos);
    } else if (asked == "md") {
      EXPECT_EQ(out.find("<html"), std::string::npos);
      EXPECT_EQ(out.rfind("#", 0), 0u);
    }
  }
}
