// The strata executable. This is the only place that catches errors: each becomes one
// `error:` line on stderr and an exit code (2 bad input, 3 no strategy fits, 1 bug or
// device failure). Nothing escapes as an uncaught exception, abort or stack trace.
//
// Under mpirun every rank runs this same main. Bad flags, bad input and "no strategy
// fits" are the same on every rank (the same arguments and files; `strata train` makes
// the ranks agree on set-up failures before it goes on), so only rank 0 prints those and
// the other ranks exit with the same code silently: the user sees one `error:` line.
// Device, internal and output failures may be one rank's own, and every rank reports them,
// unless the rank knows another one reports it (ReportedByAnotherRank: exit code only).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>

#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/completion.h"
#include "cli/integer_flags.h"
#include "common/output_file.h"
#include "common/errors.h"
#include "common/one_line.h"
#include "common/stop_signals.h"
#include "kernels/cpu/mpi_communicator.h"
#include "kernels/profiler/build_info.h"

namespace {

int report(const char* kind, const std::string& what, int code) {
  std::fflush(stdout);
  fmt::print(stderr, "error: {}{}\n", kind, strata::message_on_one_line(what));
  return code;
}

// An error every rank of an MPI job hits identically (bad flags, bad input, no strategy
// fits): rank 0 reports it, the other ranks only exit with the same code.
// Under a launcher the ranks meet after rank 0 has printed: mpirun ends the whole job at
// the first non-zero exit, which could otherwise kill rank 0 before its line is out.
int report_on_rank0(const char* kind, const std::string& what, int code) {
  const int rank = strata::kernels::launcher_rank_or_none();
  if (rank > 0) {
    std::fflush(stdout);
  } else {
    report(kind, what, code);
    std::fflush(stderr);
  }
  if (rank >= 0) strata::kernels::mpi_world_barrier_best_effort();
  return code;
}

// The deepest subcommand that was being parsed, for the "see --help" hint.
std::string command_path(const CLI::App& app) {
  std::string path = "strata";
  const CLI::App* cur = &app;
  while (true) {
    auto subs = cur->get_subcommands();
    if (subs.empty()) break;
    cur = subs.front();
    path += " " + cur->get_name();
  }
  return path;
}

std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e, int argc,
                                char** argv) {
  std::string msg = e.what();
  if (dynamic_cast<const CLI::RequiredError*>(&e) && app.get_subcommands().empty()) {
    std::string names;
    for (const auto* s : app.get_subcommands({}))
      if (!s->get_name().empty()) names += (names.empty() ? "" : ", ") + s->get_name();
    if (argc > 1 && argv[1][0] != '-')
      msg = fmt::format("unknown command '{}', expected one of: {}", argv[1], names);
    else
      msg = "a command is required, one of: " + names;
  }
  return fmt::format("{} (see `{} --help`)", msg, command_path(app));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    strata::cli::record_command_line(argc, argv);
    CLI::App app{"strata: plan, simulate and run hybrid-parallel training of transformers"};
    app.require_subcommand(1);
    // The commit is `git describe` at build time (kernels/profiler/build_info.h).
    namespace build = strata::kernels::profiler;
    app.set_version_flag("--version", fmt::format("strata {} (commit {}, {} build, CUDA backend {})",
                                                  build::strata_version(), build::build_commit(), build::build_type(),
                                                  build::cuda_built() ? "on" : "off"));
    strata::cli::add_plan_command(app);
    strata::cli::add_simulate_command(app);
    strata::cli::add_models_command(app);
    strata::cli::add_clusters_command(app);
    strata::cli::add_stacks_command(app);
    strata::cli::add_calibrate_command(app);
    strata::cli::add_train_command(app);
    strata::cli::add_validate_command(app);
    strata::cli::add_compare_command(app);
    strata::cli::add_export_command(app);
    strata::cli::add_completion_command(app);
    strata::cli::check_integer_flags(app);
    for (CLI::App* sub : app.get_subcommands({}))
      sub->add_flag_callback("--force", [] { strata::set_force_overwrite(true); },
                             "replace an existing output file that is not a strata output");
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      return report_on_rank0("", parse_error_message(app, e, argc, argv), strata::kExitInput);
    }
    if (std::fflush(stdout) != 0)
      return report("", "cannot write to standard output", strata::kExitInput);
  } catch (const strata::InputError& e) {
    return report_on_rank0("", e.what(), strata::kExitInput);
  } catch (const strata::NoFeasiblePlan& e) {
    return report_on_rank0("", e.what(), strata::kExitNoPlan);
  } catch (const strata::ReportedByAnotherRank& e) {
    std::fflush(stdout);
    return e.code();
  } catch (const strata::Stopped& e) {
    return report("", e.what(), 128 + e.signal());
  } catch (const strata::DeviceError& e) {
    return report("device: ", e.what(), strata::kExitInternal);
  } catch (const std::bad_alloc&) {
    return report("internal: ", "out of memory", strata::kExitInternal);
  } catch (const strata::InternalError& e) {
    return report(
        "internal: ", std::string(e.what()) + " (this is a bug in strata; please report it)",
        strata::kExitInternal);
  } catch (const std::exception& e) {
    return report("internal: ", e.what(), strata::kExitInternal);
  } catch (...) {
    return report("internal: ", "unknown exception", strata::kExitInternal);
  }
  return strata::kExitOk;
}
