// `strata validate`, second half: the plans measured under mpirun in rounds, and the report
// made of the measurements. check_launch_options and run_plans are the launching side;
// new_report and finish_report take measurements from anywhere, so step times of the
// plans measured elsewhere fill the report's runs and a MeasuredSteps in place of run_plans
// and share the rest.
#pragma once
#include <string>
#include <vector>

#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "validation/validate_plans.h"
#include "validation/validate_report.h"

namespace strata::validation {

// What cannot run, refused before anything is loaded: --steps not above --warmup, a
// --strata that is not executable, an --mpirun not found. Returns the strata binary to
// launch (o.strata, or this executable).
std::string check_launch_options(const ValidateOptions& o);

// The files one plan's run leaves in the work folder `dir`: <stem>.yaml (the plan),
// <stem>.jsonl (its metrics) and <stem>.log, with stem = dir/plan-N for the 0-based `index`.
std::string plan_file_stem(const std::string& dir, std::size_t index);

// The report before measuring: the options, and one PlanRun per plan with its prediction,
// status "ok".
ValidateReport new_report(const ValidateOptions& o, const std::string& model_name,
                          const std::vector<PlanToRun>& plans);

// Step times after warm-up per plan (the index of report.runs), over every round: what the
// medians are taken of.
struct MeasuredSteps {
  std::vector<std::vector<double>> step_s;
  std::vector<std::vector<double>> gemm_s;
};

// Runs every plan o.repeat times, in rounds over all plans (`mpirun -np N --oversubscribe
// strata train --plan P --steps S --synthetic --metrics M`), in o.keep_dir or a temporary
// folder removed afterwards; with o.recalibrate, calibrates this machine before each round
// and predicts the round again. Progress lines on stderr; a plan that fails is marked in
// report.runs (status, error) and not run again.
MeasuredSteps run_plans(const ValidateOptions& o, const std::string& strata,
                        const std::vector<PlanToRun>& plans, const costmodel::ClusterSpec& cluster,
                        const costmodel::SoftwareStack& stack, ValidateReport& report,
                        const Warn& warn);

// The medians of the measurements and the summary. InputError when no plan ran (one error
// line instead of a table of failures); a warning when some failed.
void finish_report(ValidateReport& report, const MeasuredSteps& m, const ValidateOptions& o,
                   const Warn& warn);

}  // namespace strata::validation
