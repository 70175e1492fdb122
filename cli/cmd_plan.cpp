// Placeholder until the `plan` command lands: registered so --help lists it.
#include "cli/commands.h"
#include "common/errors.h"

namespace strata::cli {

void add_plan_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("plan", "(not built yet)");
  cmd->callback([] { throw InternalError("strata plan is not implemented in this build"); });
}

}  // namespace strata::cli
