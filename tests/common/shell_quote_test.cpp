// common/shell_quote.h through a real shell: the words bash reads back from the quoted
// command are the arguments given, byte for byte, whatever they hold.
#include "common/shell_quote.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

namespace fs = std::filesystem;

// The arguments `shell` (bash or sh) passes to printf when it runs `printf '%s\0' WORDS`,
// split at the NULs.
std::vector<std::string> words_read_back(const std::string& shell, const std::string& words) {
  const fs::path dir = fs::temp_directory_path() / ("strata_shell_quote_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path script = dir / "s.sh", out = dir / "out";
  std::ofstream(script) << "printf '%s\\0' " << words << "\n";
  const int rc = std::system((shell + " '" + script.string() + "' > '" + out.string() + "'").c_str());
  EXPECT_EQ(rc, 0) << words;
  std::ifstream in(out, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  fs::remove_all(dir);
  std::vector<std::string> back;
  std::string all = ss.str(), cur;
  for (char c : all) {
    if (c == '\0') {
      back.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return back;
}

TEST(ShellQuote, PlainWordsStayAsTheyAreOthersAreSingleQuoted) {
  EXPECT_EQ(strata::shell_quote("--model"), "--model");
  EXPECT_EQ(strata::shell_quote("configs/llama-3_70b.yaml"), "configs/llama-3_70b.yaml");
  EXPECT_EQ(strata::shell_quote("a=b,c:d@e%f+g"), "a=b,c:d@e%f+g");
  EXPECT_EQ(strata::shell_quote("modèle"), "modèle");  // UTF-8 letters need no quotes
  EXPECT_EQ(strata::shell_quote(""), "''");
  EXPECT_EQ(strata::shell_quote("my file.yaml"), "'my file.yaml'");
  EXPECT_EQ(strata::shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(strata::shell_quote("~/x"), "'~/x'");  // no tilde expansion
  EXPECT_EQ(strata::shell_command({"strata", "compare", "--strategies", "a b.yaml"}),
            "strata compare --strategies 'a b.yaml'");
}

TEST(ShellQuote, BashAndShReadBackExactlyTheWordsGiven) {
  const std::vector<std::string> words = {
      "plain", "", " ", "two words", "it's", "''", "\"double\"", "$HOME", "${X:-y}", "$(echo no)", "`echo no`",
      "a;b", "a|b", "a&b", "<in", ">out", "(x)", "{a,b}", "*", "?", "[ab]", "#not a comment", "~", "!1",
      "back\\slash", "new\nline", "tab\there", "cr\rhere", "\x01\x7f", "é ü", "-", "--flag=a b", "%", "^x"};
  const std::string command = strata::shell_command(words);
  for (const char* shell : {"bash", "sh"}) {
    SCOPED_TRACE(shell);
    EXPECT_EQ(words_read_back(shell, command), words);
  }
}

}  // namespace
