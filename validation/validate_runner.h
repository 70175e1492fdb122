// The side-effecting half of `strata validate`: launch `strata train` for one plan
// under mpirun with a timeout, and read the per-step metrics it writes (JSONL).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace strata::validation {

// One line of `strata train --metrics FILE`.
struct StepMetric {
  int step = 0;
  double loss = 0;
  double step_s = 0;
  double tokens_per_s = 0;
  double predicted_step_s = 0;  // 0 when the line has none
  double gemm_s = 0;            // time inside GEMM calls this step (0 when not logged)
};

// Parses the JSONL written by `strata train --metrics`; blank lines are skipped.
// InputError names `source:line` on a malformed line or a missing "step"/"step_s".
std::vector<StepMetric> parse_metrics_jsonl(const std::string& text, const std::string& source);

struct ProcessResult {
  int exit_code = 0;      // exit status, or 128 + signal
  bool timed_out = false;
  std::string log;        // combined stdout + stderr (last 64 KiB)
};

// Runs argv (no shell) in its own process group with `env` added to the environment,
// stdout and stderr to `log_path`, stdin from /dev/null. After `timeout_s` the whole
// group gets SIGTERM, then SIGKILL 3 s later. Throws DeviceError if it cannot start.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& env,
                          double timeout_s, const std::string& log_path);

// The line of `log` worth showing for a failure: the first containing "error"
// (any case), else the last non-empty line; trimmed to 200 characters.
std::string first_error_line(const std::string& log);

// Absolute path of the running executable (/proc/self/exe).
std::string self_executable();

}  // namespace strata::validation
