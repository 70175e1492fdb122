// One function per subcommand; each lives in cli/cmd_<name>.cpp and registers its
// options and callback on the app. Callbacks throw InputError / NoFeasiblePlan;
// only main.cpp catches and maps them to the `error:` line and exit code.
#pragma once
#include <CLI/CLI.hpp>

namespace strata::cli {

void add_plan_command(CLI::App& app);
void add_simulate_command(CLI::App& app);
void add_models_command(CLI::App& app);
void add_clusters_command(CLI::App& app);
void add_stacks_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_export_command(CLI::App& app);

}  // namespace strata::cli
