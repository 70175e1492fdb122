// Integer flags read exactly. CLI11 converts integer text with strtoll/strtoull in base 0,
// so a 64-bit flag given 99999999999999999999 silently becomes 9223372036854775807, an
// unsigned one given -1 becomes 18446744073709551615, and 010 is read as octal 8. Every
// integer option of every command gets a check that refuses values outside 64 bits (and
// negative ones for unsigned options) by name, and reads leading zeros as decimal.
#pragma once
#include <CLI/CLI.hpp>

namespace strata::cli {

// Adds the check to every option of `app` and its subcommands, recursively, whose type is
// an integer (CLI11 type names INT and UINT). Call after all commands are added.
void check_integer_flags(CLI::App& app);

}  // namespace strata::cli
