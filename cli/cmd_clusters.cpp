// Placeholder until the `clusters` command lands: registered so --help lists it.
#include "cli/commands.h"
#include "common/errors.h"

namespace strata::cli {

void add_clusters_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("clusters", "(not built yet)");
  cmd->callback([] { throw InternalError("strata clusters is not implemented in this build"); });
}

}  // namespace strata::cli
