// `strata completion bash` against the CLI's own help: every option each command's
// --help prints is offered after a dash, every fixed choice list after its option, and
// every catalog model after --model. The help text and the script come from the same
// CLI definition by two different routes (CLI11's formatter, the completion walker),
// so a flag the walker misses or a choice list it misreads fails here.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tests/integration/cli_run.h"

namespace {

using strata::testing::run_program;
namespace fs = std::filesystem;

strata::testing::RunResult strata_run(const std::vector<std::string>& args) {
  return run_program(STRATA_EXE, args, 60);
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// An option line of CLI11's help: "  -m,--model TEXT=..." or "  --gantt TEXT:{best,all,none}=best".
struct HelpOption {
  std::vector<std::string> names;
  std::vector<std::string> choices;
};

std::vector<HelpOption> help_options(const std::string& help) {
  std::vector<HelpOption> out;
  std::istringstream in(help);
  // The names are the first word, comma-separated, each perhaps with a "{false}" default.
  static const std::regex line(R"(^  (-[-A-Za-z0-9,{}]+)(?: ([A-Z]+)(:\{([^}]*)\})?)?)");
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_search(l, m, line)) continue;
    HelpOption o;
    std::string spec = std::regex_replace(std::string(m[1]), std::regex(R"(\{[^}]*\})"), "");
    for (char& c : spec) c = c == ',' ? ' ' : c;
    o.names = words(spec);
    if (m[4].matched) {
      std::string list = m[4];
      for (char& c : list) c = c == ',' ? ' ' : c;
      o.choices = words(list);
    }
    out.push_back(o);
  }
  return out;
}

std::vector<std::string> subcommands(const std::string& help) {
  std::vector<std::string> out;
  const size_t at = help.find("Subcommands:\n");
  if (at == std::string::npos) return out;
  std::istringstream in(help.substr(at + 13));
  for (std::string l; std::getline(in, l) && l.rfind("  ", 0) == 0;)
    if (l.size() > 2 && l[2] != ' ') out.push_back(words(l)[0]);
  return out;
}

class Completion : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata_completion_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    auto r = strata_run({"completion", "bash"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    script_ = (dir_ / "strata.bash").string();
    std::ofstream(script_) << r.out;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The candidates bash offers for `strata <line...>` with the cursor on the last word.
  std::vector<std::vector<std::string>> complete(const std::vector<std::vector<std::string>>& lines) {
    std::string driver = "source '" + script_ + "'\n";
    for (const auto& l : lines) {
      driver += "COMP_WORDS=(strata";
      for (const auto& w : l) driver += " '" + w + "'";
      driver += "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _strata; echo \"${COMPREPLY[*]}\"\n";
    }
    const std::string path = (dir_ / "driver.sh").string();
    std::ofstream(path) << driver;
    auto r = run_program("/bin/bash", {path}, 60, dir_.string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::vector<std::string>> out;
    std::istringstream in(r.out);
    for (std::string l; std::getline(in, l);) out.push_back(words(l));
    EXPECT_EQ(out.size(), lines.size()) << r.out;
    out.resize(lines.size());
    return out;
  }

  fs::path dir_;
  std::string script_;
};

TEST_F(Completion, TheScriptIsValidBashForBothShells) {
  auto check = run_program("/bin/bash", {"-n", script_});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  auto zsh = strata_run({"completion", "zsh"});
  ASSERT_EQ(zsh.exit_code, 0) << zsh.err;
  EXPECT_NE(zsh.out.find("bashcompinit"), std::string::npos);
  auto bad = strata_run({"completion", "fish"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.error_lines().size(), 1u) << bad.err;
}

TEST_F(Completion, EveryCommandAndEveryOptionItsHelpListsIsOffered) {
  const auto root_help = strata_run({"--help"});
  std::vector<std::vector<std::string>> commands;
  for (const auto& c : subcommands(root_help.out)) {
    commands.push_back({c});
    for (const auto& s : subcommands(strata_run({c, "--help"}).out)) commands.push_back({c, s});
  }
  ASSERT_GE(commands.size(), 12u) << root_help.out;  // plan ... completion, and the `show`s

  // Subcommand names at the root.
  const auto top = complete({{""}})[0];
  std::set<std::string> want_top;
  for (const auto& c : commands)
    if (c.size() == 1) want_top.insert(c[0]);
  EXPECT_EQ(std::set<std::string>(top.begin(), top.end()), want_top);

  std::vector<std::vector<std::string>> dash_lines, choice_lines;
  std::vector<std::set<std::string>> want_options;
  std::vector<std::pair<std::string, std::set<std::string>>> want_choices;
  for (const auto& c : commands) {
    std::vector<std::string> help_args = c;
    help_args.push_back("--help");
    const auto opts = help_options(strata_run(help_args).out);
    ASSERT_FALSE(opts.empty()) << c[0];
    std::set<std::string> names;
    for (const auto& o : opts) {
      names.insert(o.names.begin(), o.names.end());
      if (o.choices.empty()) continue;
      std::vector<std::string> line = c;
      line.push_back(o.names.back());
      line.push_back("");
      choice_lines.push_back(line);
      want_choices.emplace_back(c[0] + " " + o.names.back(), std::set<std::string>(o.choices.begin(), o.choices.end()));
    }
    std::vector<std::string> line = c;
    line.push_back("-");
    dash_lines.push_back(line);
    want_options.push_back(names);
  }
  const auto dashes = complete(dash_lines);
  for (size_t i = 0; i < dashes.size(); ++i)
    EXPECT_EQ(std::set<std::string>(dashes[i].begin(), dashes[i].end()), want_options[i]) << dash_lines[i][0];
  ASSERT_GE(choice_lines.size(), 8u);  // --format of most commands, --to, --gantt, --precision, ...
  const auto chosen = complete(choice_lines);
  for (size_t i = 0; i < chosen.size(); ++i)
    EXPECT_EQ(std::set<std::string>(chosen[i].begin(), chosen[i].end()), want_choices[i].second)
        << want_choices[i].first;
}

TEST_F(Completion, CatalogNamesFollowModelClusterAndShowAndNumbersOfferNothing) {
  const auto list = strata_run({"models", "--format", "json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::set<std::string> models;
  const auto catalog = nlohmann::json::parse(list.out);
  for (const auto& m : catalog["models"]) models.insert(m["name"].get<std::string>());
  ASSERT_GE(models.size(), 10u) << list.out.substr(0, 200);
  const auto got = complete({{"plan", "--model", ""},
                             {"models", "show", "llama3-7"},
                             {"simulate", "-c", "dgx-h"},
                             {"plan", "--gpus", ""},
                             {"plan", "--stack", "nemo-2024-p"},
                             {"pl"}});
  std::set<std::string> offered(got[0].begin(), got[0].end());
  for (const auto& m : models) EXPECT_TRUE(offered.contains(m)) << m;
  EXPECT_EQ(got[1], std::vector<std::string>{"llama3-70b"});
  EXPECT_EQ(got[2], std::vector<std::string>{"dgx-h100"});
  EXPECT_TRUE(got[3].empty()) << got[3].size();
  EXPECT_EQ(got[4], (std::vector<std::string>{"nemo-2024-perf", "nemo-2024-perf-deepep"}));
  EXPECT_EQ(got[5], std::vector<std::string>{"plan"});
}

}  // namespace
