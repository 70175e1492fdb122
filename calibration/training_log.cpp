#include "calibration/training_log.h"

#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>

#include "common/atomic_file.h"
#include "common/errors.h"

namespace strata::calibration {

namespace {

struct Format {
  const char* name;
  std::regex pattern;  // group 1: the number
  double scale;        // to seconds (or tokens/s for torchtitan)
};

const std::vector<Format>& formats() {
  static const std::vector<Format> f = {
      {"megatron", std::regex(R"(elapsed time per iteration \(ms\):\s*([0-9.eE+-]+))"), 1e-3},
      // BigScience's Megatron-DeepSpeed logs seconds (megatron/training.py training_log,
      // bigscience-workshop/Megatron-DeepSpeed 8387ae17: "elapsed time per iteration (s): {:.2f}").
      {"megatron-deepspeed", std::regex(R"(elapsed time per iteration \(s\):\s*([0-9.eE+-]+))"), 1.0},
      {"nemo", std::regex(R"(train_step_timing in s\s*[=:]\s*([0-9.eE+-]+))"), 1.0},
      {"torchtitan", std::regex(R"(step:\s*\d+\s.*\btps:\s*([0-9][0-9,]*))"), 1.0},
  };
  return f;
}

std::string strip_ansi(const std::string& line) {
  static const std::regex ansi(R"(\x1B\[[0-9;]*[A-Za-z])");
  return std::regex_replace(line, ansi, "");
}

}  // namespace

TrainingLog parse_training_log(const std::string& text, const std::string& source, int skip) {
  TrainingLog log;
  std::istringstream in(text);
  std::size_t line_no = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++line_no;
    if (raw.size() > 100000) continue;  // not a log line of any framework
    const std::string line = strip_ansi(raw);
    for (const auto& f : formats()) {
      std::smatch m;
      if (!std::regex_search(line, m, f.pattern)) continue;
      if (!log.format.empty() && log.format != f.name)
        input_error("{}:{}: a {} timing line in a {} log: one job per log", source, line_no, f.name, log.format);
      log.format = f.name;
      std::string num = m[1].str();
      num.erase(std::remove(num.begin(), num.end(), ','), num.end());
      double v = 0;
      try {
        std::size_t used = 0;
        v = std::stod(num, &used);
      } catch (const std::exception&) {
        v = -1;
      }
      if (!(v > 0) || !std::isfinite(v))
        input_error("{}:{}: step timing '{}' is not a positive number", source, line_no, m[1].str());
      log.values.push_back(v * f.scale);
      break;
    }
  }
  if (log.values.empty())
    input_error("{}: no step timing found: expected Megatron-LM's 'elapsed time per iteration (ms): X' (BigScience "
                "Megatron-DeepSpeed's '(s): X'), NeMo's 'train_step_timing in s=X' or TorchTitan's 'step: N ... tps: X' "
                "lines",
                source);
  std::vector<double> kept = log.values;
  log.skipped = std::min<int>(std::max(0, skip), static_cast<int>(kept.size()) - 1);
  kept.erase(kept.begin(), kept.begin() + log.skipped);
  std::sort(kept.begin(), kept.end());
  const std::size_t n = kept.size();
  log.median = n % 2 ? kept[n / 2] : 0.5 * (kept[n / 2 - 1] + kept[n / 2]);
  return log;
}

TrainingLog read_training_log(const std::string& path, int skip) {
  return parse_training_log(read_file(path), path, skip);
}

}  // namespace strata::calibration
