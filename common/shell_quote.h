// Shell words for commands strata prints for a person or a script to run again (export
// scripts, the command that reproduces a compare report). A value can come from a user's
// file or command line and hold anything: quoted, it reaches the program as one argument,
// exactly as given, under bash or a POSIX sh.
#pragma once
#include <string>
#include <vector>

namespace strata {

// `v` as one shell word: unchanged when every byte is a letter, a digit, one of
// @ % + = : , . / - _ or a byte of a multi-byte UTF-8 character (none of them means anything
// to a shell there); otherwise in single quotes, each ' written as '\'' (the only
// character single quotes cannot hold). "" is ''.
std::string shell_quote(const std::string& v);

// The words quoted and joined with spaces: one command line.
std::string shell_command(const std::vector<std::string>& words);

}  // namespace strata
