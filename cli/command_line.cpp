#include "cli/command_line.h"

#include <vector>

#include "common/shell_quote.h"

namespace strata::cli {

namespace {

std::vector<std::string>& recorded() {
  static std::vector<std::string> args;
  return args;
}

}  // namespace

void record_command_line(int argc, const char* const* argv) {
  recorded().assign(argv + (argc > 0 ? 1 : 0), argv + argc);
  recorded().insert(recorded().begin(), "strata");
}

std::string reproducing_command() { return recorded().empty() ? "" : shell_command(recorded()); }

}  // namespace strata::cli
