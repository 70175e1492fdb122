// Placeholder until the `models` command lands: registered so --help lists it.
#include "cli/commands.h"
#include "common/errors.h"

namespace strata::cli {

void add_models_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("models", "(not built yet)");
  cmd->callback([] { throw InternalError("strata models is not implemented in this build"); });
}

}  // namespace strata::cli
