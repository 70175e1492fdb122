// Placeholder until the `simulate` command lands: registered so --help lists it.
#include "cli/commands.h"
#include "common/errors.h"

namespace strata::cli {

void add_simulate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("simulate", "(not built yet)");
  cmd->callback([] { throw InternalError("strata simulate is not implemented in this build"); });
}

}  // namespace strata::cli
