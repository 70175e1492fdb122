// Placeholder until the `validate` command lands: registered so --help lists it.
#include "cli/commands.h"
#include "common/errors.h"

namespace strata::cli {

void add_validate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("validate", "(not built yet)");
  cmd->callback([] { throw InternalError("strata validate is not implemented in this build"); });
}

}  // namespace strata::cli
