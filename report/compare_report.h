// What `strata compare` shows, assembled: the strategies chosen (a strategies file, the
// plans of a `strata validate` run, or the planner's top K), each simulated, the timelines
// of those the Gantt charts draw, and the measured step times matched to them. The command
// line gives the values (compare_report turns them into a ReportData, the renderers into
// text); messages name the command's flags so every `error:` line says what to change.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "report/report_data.h"
#include "report/report_json.h"

namespace strata::report {

struct CompareOptions {
  std::string cluster_name;              // as the user gave it (catalog name or path)
  int gpus = 0;
  std::int64_t global_batch = 0;         // 0: the planner's default
  // The global batch of a listed strategy without one: this, rounded up to a multiple of
  // micro_batch x dp (the `strata simulate` default).
  std::int64_t default_global_batch = 512;
  int top = 5;                           // the planner's best K when nothing else chooses
  std::string precision;                 // in place of the stack's, unless an entry sets one
  // The strategies, first that applies: a strategies file (its text and path), the
  // measured runs' plans (from_measured), the planner's top `top`.
  std::string strategies_text, strategies_path;
  const MeasuredFile* measured = nullptr;  // `strata validate --format json`, read from measured_path
  std::string measured_path;
  bool from_measured = false;
  std::string gantt = "best";            // timelines: best | all | none
  std::string format = "html";           // html | md | json (md draws no timelines)
  TrainingTarget target;
  std::string command_line;              // the command that reproduces the report ("" unknown)
};

using WarnLine = std::function<void(const std::string&)>;

// InputError for an invalid or oversized strategy, an empty measured list, or timelines
// over planner::kMaxTraceBytes; NoFeasiblePlan when the planner finds none.
// `warn` gets mismatches between the measurements and the report.
ReportData build_compare_report(const models::ModelSpec& model, const costmodel::ClusterSpec& cluster,
                                const costmodel::SoftwareStack& stack, const CompareOptions& o,
                                const WarnLine& warn);

// The format of the report: `given`, else the extension of `path` (.md / .markdown, .json,
// .html / .htm), else html for a file and md for stdout ("-"). A `given` format that
// contradicts the extension is an InputError rather than HTML written into x.md.
std::string compare_report_format(const std::string& path, const std::string& given);
// report_html, report_json or report_markdown by format.
std::string render_compare_report(const ReportData& data, const std::string& format);

}  // namespace strata::report
