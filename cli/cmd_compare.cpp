// Placeholder until the `compare` command lands: registered so --help lists it.
#include "cli/commands.h"
#include "common/errors.h"

namespace strata::cli {

void add_compare_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("compare", "(not built yet)");
  cmd->callback([] { throw InternalError("strata compare is not implemented in this build"); });
}

}  // namespace strata::cli
