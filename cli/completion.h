// Shell completion generated from the CLI definition itself: every command, subcommand
// and option the parser knows, with the values an option takes (its fixed choices, the
// catalog's names for --model / --cluster / --stack / --profile, file names for paths,
// nothing for numbers). A flag added to a command is in the next `strata completion`
// without anyone editing a script.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

namespace strata::cli {

// `strata completion bash|zsh`: the root app is walked when the command runs, so every
// command registered before it parses is covered.
void add_completion_command(CLI::App& app);

// The script for `shell` ("bash" or "zsh"; zsh loads it through bashcompinit).
std::string completion_script(const CLI::App& root, const std::string& shell);

}  // namespace strata::cli
