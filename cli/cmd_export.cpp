// Placeholder until the `export` command lands: registered so --help lists it.
#include "cli/commands.h"
#include "common/errors.h"

namespace strata::cli {

void add_export_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("export", "(not built yet)");
  cmd->callback([] { throw InternalError("strata export is not implemented in this build"); });
}

}  // namespace strata::cli
