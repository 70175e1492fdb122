// Placeholder until the `train` command lands: registered so --help lists it.
#include "cli/commands.h"
#include "common/errors.h"

namespace strata::cli {

void add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "(not built yet)");
  cmd->callback([] { throw InternalError("strata train is not implemented in this build"); });
}

}  // namespace strata::cli
