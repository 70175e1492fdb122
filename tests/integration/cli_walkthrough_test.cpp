// docs/walkthrough.md runs as written: its `bash` blocks, in order, in one folder, with
// the built strata first on PATH; the `text` block after a command block is what that
// block prints on stdout ("..." stands for any number of lines, the search's wall time is
// not compared). No block may print an `error:` line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/integration/cli_run.h"

namespace {

namespace fs = std::filesystem;

struct Block {
  std::string commands;
  std::optional<std::string> expected;
  int line = 0;  // where the bash block starts in the page
};

std::vector<Block> blocks(const std::string& page) {
  std::vector<Block> out;
  std::istringstream in(page);
  std::string l, kind, body;
  int n = 0, start = 0;
  bool inside = false;
  while (std::getline(in, l)) {
    ++n;
    if (!inside && l.rfind("```", 0) == 0) {
      inside = true;
      kind = l.substr(3);
      body.clear();
      start = n;
    } else if (inside && l == "```") {
      inside = false;
      if (kind == "bash") out.push_back({body, std::nullopt, start});
      else if (kind == "text" && !out.empty() && !out.back().expected) out.back().expected = body;
    } else if (inside) {
      body += l + "\n";
    }
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  static const std::regex wall(R"(candidates in [0-9.]+ s)");
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(std::regex_replace(l, wall, "candidates in # s"));
  return out;
}

// Every expected line appears in order; "..." skips any number of actual lines.
std::string mismatch(const std::vector<std::string>& want, const std::vector<std::string>& got) {
  std::size_t g = 0;
  bool skip = false;
  for (const auto& w : want) {
    if (w == "...") {
      skip = true;
      continue;
    }
    if (skip) {
      while (g < got.size() && got[g] != w) ++g;
    }
    if (g >= got.size() || got[g] != w)
      return "expected line not found" + std::string(skip ? " after the skipped ones" : " next") + ":\n  " + w +
             (g < got.size() ? "\nprinted instead:\n  " + got[g] : "\nthe output ended");
    ++g;
    skip = false;
  }
  if (!skip && g < got.size()) return "printed more lines than the page shows, from:\n  " + got[g];
  return "";
}

TEST(Walkthrough, EveryCommandOfThePageRunsAndPrintsWhatThePageShows) {
  std::ifstream page_file(STRATA_WALKTHROUGH);
  ASSERT_TRUE(page_file) << STRATA_WALKTHROUGH;
  std::stringstream page;
  page << page_file.rdbuf();
  const auto bs = blocks(page.str());
  ASSERT_GE(bs.size(), 6u) << "the page's command blocks";

  const fs::path dir = fs::temp_directory_path() / ("strata_walkthrough_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const char* path = std::getenv("PATH");
  const std::string env_path =
      "PATH=" + fs::path(STRATA_EXE).parent_path().string() + ":" + (path != nullptr ? path : "/usr/bin:/bin");
  for (std::size_t i = 0; i < bs.size(); ++i) {
    const std::string script = (dir / ("block" + std::to_string(i) + ".sh")).string();
    std::ofstream(script) << bs[i].commands;
    const auto r = strata::testing::run_program("/bin/bash", {script}, 300, dir.string(), {env_path});
    const std::string where = "docs/walkthrough.md:" + std::to_string(bs[i].line);
    EXPECT_FALSE(r.timed_out || r.signaled) << where;
    EXPECT_TRUE(r.error_lines().empty()) << where << ": " << r.err;
    if (bs[i].expected) {
      EXPECT_EQ(mismatch(lines_of(*bs[i].expected), lines_of(r.out)), "") << where << " printed:\n" << r.out;
    }
  }
  fs::remove_all(dir);
}

// The comparison itself: it must be able to fail.
TEST(Walkthrough, TheComparisonFailsOnAMissingChangedOrExtraLine) {
  const std::vector<std::string> got = {"a", "b", "c", "d"};
  EXPECT_EQ(mismatch({"a", "...", "d"}, got), "");
  EXPECT_EQ(mismatch({"...", "c", "..."}, got), "");
  EXPECT_NE(mismatch({"a", "c", "..."}, got), "");        // b is not left out by "..."
  EXPECT_NE(mismatch({"a", "...", "x"}, got), "");        // x never printed
  EXPECT_NE(mismatch({"a", "b", "c"}, got), "");          // d is more than the page shows
  EXPECT_EQ(lines_of("searched 12 candidates in 0.512 s: x")[0], "searched 12 candidates in # s: x");
}

}  // namespace
