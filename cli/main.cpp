// The strata executable. This is the only place that catches errors: each becomes one
// `error:` line on stderr and an exit code (2 bad input, 3 no strategy fits, 1 bug).
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "common/errors.h"

int main(int argc, char** argv) {
  CLI::App app{"strata: plan, simulate and run hybrid-parallel training of transformers"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "strata 0.1.0");
  strata::cli::add_plan_command(app);
  strata::cli::add_simulate_command(app);
  strata::cli::add_models_command(app);
  strata::cli::add_clusters_command(app);
  strata::cli::add_calibrate_command(app);
  strata::cli::add_train_command(app);
  strata::cli::add_validate_command(app);
  strata::cli::add_compare_command(app);
  strata::cli::add_export_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return strata::kExitInput;
  } catch (const strata::InputError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return strata::kExitInput;
  } catch (const strata::NoFeasiblePlan& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return strata::kExitNoPlan;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: internal: {}\n", e.what());
    return strata::kExitInternal;
  }
  return strata::kExitOk;
}
