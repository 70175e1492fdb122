// One function per subcommand; each lives in cli/cmd_<name>.cpp and registers its
// options and callback on the app. Callbacks throw InputError / NoFeasiblePlan;
// only main.cpp catches and maps them to the `error:` line and exit code.
//
// The command layer only defines commands: flags, calls into the components, printing.
// What the commands call lives in its own component (report/, export/, calibration/,
// validation/). The names of report, export and validation are visible unqualified in
// strata::cli, as they were before they moved out of it; calibration is called by name
// (calibration::calibrate) from cmd_calibrate.cpp only.
#pragma once
#include <CLI/CLI.hpp>

namespace strata::report {}
namespace strata::exports {}
namespace strata::validation {}

namespace strata::cli {

using namespace strata::report;      // report/: plan tables, JSON/YAML, compare reports
using namespace strata::exports;     // export/: Megatron-LM / DeepSpeed / TorchTitan
using namespace strata::validation;  // validation/: running plans, predicted vs measured

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
