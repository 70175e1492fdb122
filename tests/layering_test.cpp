// Layering: reads every `#include "x/..."` in the components and fails, naming
// file:line, on an edge the DESIGN.md component table forbids:
//   common    -> {common}
//   models    -> {common}
//   costmodel -> {models, common}
//   planner   -> {models, costmodel, common}; the strata_plan files (strategy, schedule,
//                plan, prediction) and what they pull in from planner/detail may only
//                include models, common, costmodel/rank_grid.h, costmodel/recompute_modules.h
//                and each other
//   kernels   -> {common}; kernels/profiler may also include models
//   runtime   -> {kernels, models, common, planner/{plan,strategy,schedule,prediction}.h,
//                costmodel/rank_grid.h}
//   report      -> {planner, costmodel, models, common}
//   export      -> {models, common, planner/{plan,strategy,schedule,prediction}.h,
//                  costmodel/software_stack.h (exports emit the stack's options, imports
//                  recover them)}
//   validation  -> {report, planner, costmodel, models, common}
//   calibration -> {planner (the fit step simulates measured runs), export (runs given as
//                  the job's Megatron-LM arguments), runtime, kernels, costmodel, models, common}
//   cli       -> anything public
// and nobody includes another component's detail/ headers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kComponents = {"common",  "models",  "costmodel", "planner",
                                              "kernels", "runtime", "report",    "export",
                                              "validation", "calibration", "cli"};
const std::set<std::string> kPlanHeaders = {"planner/strategy.h", "planner/schedule.h",
                                            "planner/plan.h", "planner/prediction.h",
                                            "planner/first_last_stages.h", "planner/embedding_loss_split.h"};

std::string first_segment(const std::string& path) { return path.substr(0, path.find('/')); }

bool is_component(const std::string& c) {
  return std::find(kComponents.begin(), kComponents.end(), c) != kComponents.end();
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

std::string stem_path(const std::string& path) {  // "planner/plan.cpp" -> "planner/plan"
  auto dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(0, dot);
}

// A file of the strata_plan target (or a planner/detail header it pulls in: see
// plan_closure below, which passes those in through `plan_closure`).
bool in_strata_plan(const std::string& file, const std::set<std::string>& plan_closure) {
  return kPlanHeaders.count(stem_path(file) + ".h") > 0 || plan_closure.count(file) > 0;
}

}  // namespace

// Why `file` must not include `inc`, or "" when the edge is allowed. `plan_closure`
// holds planner/detail files reached from strata_plan sources (they obey its rules).
std::string forbidden_reason(const std::string& file, const std::string& inc,
                             const std::set<std::string>& plan_closure = {}) {
  const std::string from = first_segment(file);
  const std::string to = first_segment(inc);
  if (!is_component(to) || inc.find('/') == std::string::npos) return "";
  if (inc.find("/detail/") != std::string::npos && to != from)
    return to + "/detail/ is private to " + to;
  if (from == "cli") return "";
  if (from == "planner" && in_strata_plan(file, plan_closure)) {
    if (to == "models" || to == "common" || inc == "costmodel/rank_grid.h" ||
        inc == "costmodel/recompute_modules.h")  // header-only data (Strategy::recompute_modules)
      return "";
    if (to == "planner" && (kPlanHeaders.count(inc) || starts_with(inc, "planner/detail/")))
      return "";
    return "strata_plan (strategy/schedule/plan/prediction) may include only models, common, "
           "costmodel/rank_grid.h, costmodel/recompute_modules.h and the other strata_plan headers";
  }
  if (to == from) return "";
  static const std::map<std::string, std::set<std::string>> allowed = {
      {"common", {}},
      {"models", {"common"}},
      {"costmodel", {"models", "common"}},
      {"planner", {"models", "costmodel", "common"}},
      {"kernels", {"common"}},
      {"runtime", {"kernels", "models", "common"}},
      {"report", {"planner", "costmodel", "models", "common"}},
      {"export", {"models", "common"}},
      {"validation", {"report", "planner", "costmodel", "models", "common"}},
      {"calibration", {"planner", "export", "runtime", "kernels", "costmodel", "models", "common"}},
  };
  auto it = allowed.find(from);
  if (it == allowed.end()) return "";  // not a component (bench/, tests/): unchecked
  if (it->second.count(to)) return "";
  if (from == "kernels" && to == "models" && starts_with(file, "kernels/profiler/")) return "";
  if (from == "runtime" && (kPlanHeaders.count(inc) || inc == "costmodel/rank_grid.h")) return "";
  if ((from == "export" || from == "calibration") && kPlanHeaders.count(inc)) return "";
  if (from == "export" && inc == "costmodel/software_stack.h") return "";
  return from + " must not depend on " + to;
}

namespace {

struct Include {
  std::string file;  // repo-relative
  int line = 0;
  std::string target;
};

std::vector<Include> read_includes(const fs::path& root, const std::string& rel) {
  static const std::regex re(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::vector<Include> out;
  std::ifstream in(root / rel);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::smatch m;
    if (std::regex_search(line, m, re)) out.push_back({rel, n, m[1].str()});
  }
  return out;
}

std::map<std::string, std::vector<Include>> scan_tree(const fs::path& root) {
  std::map<std::string, std::vector<Include>> files;
  const std::set<std::string> exts = {".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh"};
  for (const auto& c : kComponents) {
    if (!fs::is_directory(root / c)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / c)) {
      if (!e.is_regular_file() || !exts.count(e.path().extension().string())) continue;
      std::string rel = fs::relative(e.path(), root).generic_string();
      files[rel] = read_includes(root, rel);
    }
  }
  return files;
}

// planner/detail files reachable from the strata_plan sources through includes.
std::set<std::string> plan_closure(const std::map<std::string, std::vector<Include>>& files) {
  std::set<std::string> closure;
  std::vector<std::string> work;
  for (const auto& [f, incs] : files)
    if (kPlanHeaders.count(stem_path(f) + ".h")) work.push_back(f);
  while (!work.empty()) {
    std::string f = work.back();
    work.pop_back();
    auto it = files.find(f);
    if (it == files.end()) continue;
    for (const auto& inc : it->second)
      if (starts_with(inc.target, "planner/detail/") && closure.insert(inc.target).second)
        work.push_back(inc.target);
  }
  return closure;
}

}  // namespace

TEST(Layering, RulesAllowTheDesignTableEdges) {
  const std::vector<std::pair<std::string, std::string>> ok = {
      {"models/model_graph.cpp", "models/model_spec.h"},
      {"models/model_spec.cpp", "common/errors.h"},
      {"costmodel/memory_model.cpp", "models/model_graph.h"},
      {"costmodel/gemm_cost.cpp", "costmodel/detail/x.h"},
      {"planner/search.cpp", "costmodel/cluster_spec.h"},
      {"planner/simulator.cpp", "planner/detail/sim_engine.h"},
      // The simulator's cost charging beside its event engine (simulator.cpp).
      {"planner/layer_costs.cpp", "costmodel/userbuffers_gemm.h"},
      {"planner/step_costs.cpp", "planner/detail/group_times.h"},
      {"planner/simulator_notes.cpp", "costmodel/prediction_band.h"},
      {"planner/plan.cpp", "costmodel/rank_grid.h"},
      {"planner/plan.h", "planner/prediction.h"},
      {"planner/strategy.cpp", "models/model_spec.h"},
      {"kernels/cpu/gemm_openblas.cpp", "kernels/backend.h"},
      {"kernels/profiler/gemm_problems.cpp", "models/model_graph.h"},
      {"runtime/pipeline_executor.cpp", "planner/schedule.h"},
      {"runtime/process_grid.cpp", "costmodel/rank_grid.h"},
      {"runtime/gpt.cpp", "kernels/backend.h"},
      {"runtime/train_cuda.cpp", "runtime/cuda/gpt_cuda.h"},
      {"runtime/train_cuda.cpp", "kernels/cuda/cuda_device.h"},
      {"cli/cmd_plan.cpp", "planner/search.h"},
      {"cli/cmd_train.cpp", "runtime/trainer.h"},
      // The train job and its output beside the trainer (runtime/train_job.h).
      {"cli/cmd_train.cpp", "runtime/train_job.h"},
      {"runtime/train_job.cpp", "kernels/cpu/mpi_communicator.h"},
      {"runtime/train_job.cpp", "costmodel/rank_grid.h"},
      {"runtime/train_job.h", "planner/plan.h"},
      {"runtime/train_cuda_job.cpp", "runtime/train_cuda.h"},
      {"runtime/train_output.cpp", "common/json_text.h"},
      {"common/progress_bar.cpp", "common/progress_bar.h"},
      {"costmodel/collective.cpp", "common/enum_names.h"},
      {"kernels/backend.cpp", "common/enum_names.h"},
      {"cli/cmd_compare.cpp", "report/report_html.h"},
      {"cli/cmd_calibrate.cpp", "calibration/calibrate.h"},
      {"report/report_data.h", "planner/simulator.h"},
      // What compare shows, chosen, searched and simulated (report/compare_report.h).
      {"report/compare_report.cpp", "planner/search.h"},
      {"report/compare_report.cpp", "planner/trace_bounds.h"},
      {"report/no_plan_reason.h", "planner/search.h"},
      {"report/report_notes.h", "costmodel/cluster_spec.h"},
      {"report/format_table.h", "costmodel/cluster_spec.h"},
      {"export/export_formats.h", "planner/plan.h"},
      {"export/export_megatron.cpp", "export/export_common.h"},
      {"export/export_common.h", "costmodel/software_stack.h"},
      {"validation/validate_plans.cpp", "planner/search.h"},
      {"validation/validate_rounds.cpp", "planner/simulator.h"},
      {"validation/validate_rounds.cpp", "costmodel/device_profile.h"},
      {"validation/validate_report.cpp", "report/report_json.h"},
      {"validation/validate_report.h", "planner/strategy.h"},
      {"calibration/block_benchmark.cpp", "runtime/transformer_block.h"},
      {"calibration/calibrate.cpp", "kernels/profiler/gemm_sweep.h"},
      // The calibration procedure's steps (calibration/detail/calibration_steps.h).
      {"calibration/detail/calibration_steps.h", "kernels/profiler/collective_sweep.h"},
      {"calibration/sweep_plan.cpp", "models/model_spec.h"},
      {"calibration/measure.cpp", "kernels/cpu/cpu_info.h"},
      {"calibration/write_profile.cpp", "costmodel/device_profile.h"},
      {"calibration/op_benchmark.cpp", "planner/strategy.h"},
      {"models/x.cpp", "CLI/CLI.hpp"},  // not a component
  };
  for (const auto& [from, inc] : ok)
    EXPECT_EQ(forbidden_reason(from, inc), "") << from << " -> " << inc;
}

TEST(Layering, RulesRejectEdgesTheDesignTableForbids) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      // CudaTraining gets the device peak from cmd_train: the runtime loads no clusters.
      {"runtime/train_cuda.cpp", "costmodel/cluster_spec.h"},
      // The train job gets the device reserve and peak from cmd_train, likewise.
      {"runtime/train_job.cpp", "costmodel/cluster_spec.h"},
      {"runtime/train_cuda_job.cpp", "costmodel/device_profile.h"},
      {"runtime/train_job.cpp", "cli/options.h"},
      {"report/compare_report.cpp", "cli/options.h"},
      {"report/compare_report.cpp", "validation/validate_report.h"},
      {"common/enum_names.h", "costmodel/collective.h"},
      {"validation/validate_rounds.cpp", "cli/options.h"},
      {"export/export_torchtitan.cpp", "report/format_json.h"},
      {"models/model_spec.cpp", "costmodel/device_profile.h"},
      {"common/errors.h", "models/model_spec.h"},
      {"costmodel/op_cost.cpp", "planner/strategy.h"},
      {"planner/search.cpp", "kernels/backend.h"},
      {"planner/search.cpp", "runtime/gpt.h"},
      {"planner/plan.cpp", "planner/search.h"},
      {"planner/schedule.cpp", "planner/simulator.h"},
      {"planner/strategy.cpp", "costmodel/cluster_spec.h"},
      {"kernels/cpu/gemm_openblas.cpp", "models/model_spec.h"},
      {"kernels/backend.h", "planner/plan.h"},
      {"kernels/profiler/gemm_sweep.cpp", "costmodel/cluster_spec.h"},
      {"runtime/gpt.cpp", "planner/search.h"},
      {"runtime/gpt.cpp", "planner/simulator.h"},
      {"runtime/gpt.cpp", "costmodel/collective_cost.h"},
      {"runtime/gpt.cpp", "report/format_table.h"},
      {"planner/search.cpp", "report/report_data.h"},
      {"report/report_data.h", "cli/options.h"},
      {"report/report_json.cpp", "validation/validate_report.h"},
      {"report/format_table.cpp", "runtime/gpt.h"},
      {"export/export_formats.cpp", "planner/search.h"},
      {"export/export_formats.cpp", "report/format_json.h"},
      {"validation/validate_runner.cpp", "cli/options.h"},
      {"validation/validate_report.cpp", "calibration/calibrate.h"},
      {"validation/validate_runner.cpp", "runtime/trainer.h"},
      {"calibration/calibrate.cpp", "cli/options.h"},
      {"calibration/calibrate.cpp", "validation/validate_report.h"},
      {"calibration/calibrate.cpp", "report/format_table.h"},
      {"runtime/gpt.cpp", "calibration/op_benchmark.h"},
      {"kernels/profiler/gemm_sweep.cpp", "calibration/calibrate.h"},
      {"cli/cmd_plan.cpp", "planner/detail/sim_engine.h"},
      {"planner/search.cpp", "costmodel/detail/yaml_emit.h"},
      {"planner/step_costs.cpp", "kernels/backend.h"},
      {"planner/layer_costs.cpp", "runtime/gpt.h"},
      {"calibration/measure.cpp", "validation/validate_rounds.h"},
      {"calibration/write_profile.cpp", "report/format_table.h"},
  };
  for (const auto& [from, inc] : bad)
    EXPECT_NE(forbidden_reason(from, inc), "") << from << " -> " << inc << " should be forbidden";
}

TEST(Layering, PlanClosureDetailHeadersObeyStrataPlanRules) {
  std::set<std::string> closure = {"planner/detail/plan_yaml.h"};
  EXPECT_EQ(forbidden_reason("planner/detail/plan_yaml.h", "models/model_spec.h", closure), "");
  EXPECT_NE(forbidden_reason("planner/detail/plan_yaml.h", "planner/search.h", closure), "");
  // The same detail header outside the closure is an ordinary planner file.
  EXPECT_EQ(forbidden_reason("planner/detail/plan_yaml.h", "planner/search.h"), "");
}

TEST(Layering, SourceTreeHasNoForbiddenInclude) {
  const fs::path root = STRATA_SOURCE_DIR;
  auto files = scan_tree(root);
  ASSERT_GT(files.size(), 10u) << "scanned too few files under " << root;
  auto closure = plan_closure(files);
  std::string violations;
  int edges = 0;
  for (const auto& [f, incs] : files)
    for (const auto& inc : incs) {
      ++edges;
      std::string why = forbidden_reason(f, inc.target, closure);
      if (!why.empty())
        violations += "\n  " + inc.file + ":" + std::to_string(inc.line) + ": #include \"" +
                      inc.target + "\": " + why;
    }
  EXPECT_GT(edges, 0);
  EXPECT_TRUE(violations.empty()) << "forbidden includes:" << violations;
}
