// The command line strata was started with, kept by main() before CLI11 parses it, so a
// command can print the command that reproduces its output (`strata compare` writes it
// into its report).
#pragma once
#include <string>

namespace strata::cli {

void record_command_line(int argc, const char* const* argv);
// "strata ARG..." with every argument as a shell word (common/shell_quote.h): run from the
// same directory, it gives the same output. The program is named `strata` whatever path it
// was started by, as a reader would type it. "" when nothing was recorded.
std::string reproducing_command();

}  // namespace strata::cli
