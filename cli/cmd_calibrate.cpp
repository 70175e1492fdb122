// Placeholder until the `calibrate` command lands: registered so --help lists it.
#include "cli/commands.h"
#include "common/errors.h"

namespace strata::cli {

void add_calibrate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("calibrate", "(not built yet)");
  cmd->callback([] { throw InternalError("strata calibrate is not implemented in this build"); });
}

}  // namespace strata::cli
