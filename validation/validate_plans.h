// `strata validate`, first half: what it runs and which plans. ValidateOptions is the
// command's run settings as data (cli/cmd_validate.cpp binds its flags to them);
// choose_plans turns --plans (top, all, plan files) into the list of plans to measure.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "planner/plan.h"

namespace strata::validation {

// Where warnings go ("warning: ..." on stderr in the command).
using Warn = std::function<void(const std::string&)>;

struct ValidateOptions {
  std::string model;    // --model as given (the calibration of --recalibrate measures it)
  std::string cluster;  // --cluster as given (the name plans and the report carry)
  std::vector<std::string> plans{"top"};  // "top", "all" or plan YAML files
  int top = 4;
  int np = 2;
  int steps = 10;
  int warmup = 2;
  int repeat = 1;
  bool recalibrate = false;
  std::int64_t global_batch = 0;
  std::string strata;  // binary to launch; empty: this one
  std::string mpirun = "mpirun";
  double timeout_s = 300;
  std::string keep_dir;
};

struct PlanToRun {
  std::string name;  // "top 1", "baseline dp", "top 2 = baseline tp", or the file
  planner::Plan plan;
};

// The plans of --plans in order: "top" the planner's best `top` plus the pure dp / tp / pp
// baselines that fit (a strategy listed twice is run once under both names), "all" every
// ranked plan, anything else a plan file (predicted again on this cluster; InputError when
// its ranks are not `np`). NoFeasiblePlan when nothing fits; skipped baselines are warned.
std::vector<PlanToRun> choose_plans(const ValidateOptions& o, const models::ModelSpec& model,
                                    const costmodel::ClusterSpec& cluster,
                                    const costmodel::SoftwareStack& stack, const Warn& warn);

}  // namespace strata::validation
