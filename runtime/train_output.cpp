#include "runtime/train_output.h"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/json_text.h"

namespace strata::runtime {

std::string metrics_line(const StepStats& s, double predicted_step_s) {
  nlohmann::ordered_json j;
  j["step"] = s.step;
  j["loss"] = s.loss;
  j["step_s"] = s.step_s;
  j["tokens_per_s"] = s.tokens_per_s;
  j["predicted_step_s"] = predicted_step_s;
  j["grad_norm"] = s.grad_norm;
  j["lr"] = s.lr;
  j["gemm_s"] = s.gemm_s;
  j["dp_wait_s"] = s.dp_wait_s;
  return j.dump() + "\n";
}

void trim_metrics(const std::string& path, std::int64_t step) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return;
  const std::string text = read_file(path, SIZE_MAX);
  std::string kept;
  std::size_t dropped = 0;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t nl = text.find('\n', at);
    const bool complete = nl != std::string::npos;
    if (!complete) nl = text.size();
    const std::string line = text.substr(at, nl - at);
    at = nl + 1;
    if (line.empty()) continue;
    bool keep = false;
    try {
      const auto j = parse_json(line);
      keep = complete && j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
             j["step"].get<std::int64_t>() <= step;
    } catch (const std::exception&) {
    }
    if (keep) kept += line + "\n";
    else ++dropped;
  }
  if (dropped == 0) return;
  write_file_atomic(path, kept);
  fmt::print("--metrics {}: dropped {} line{} after step {} (the job that wrote them ran past its "
             "last checkpoint)\n", path, dropped, dropped == 1 ? "" : "s", step);
}

MetricsFile::MetricsFile(const std::string& path, bool append)
    : path_(path), out_(path, append ? std::ios::app : std::ios::trunc) {
  if (!out_) input_error("--metrics {}: cannot open for writing", path_);
}

void MetricsFile::write(const StepStats& s, double predicted_step_s) {
  out_ << metrics_line(s, predicted_step_s);
  out_.flush();
  if (!out_) input_error("--metrics {}: write failed", path_);
}

std::string data_description(const TrainConfig& c) {
  switch (c.data) {
    case DataKind::Synthetic: return "synthetic";
    case DataKind::TokenFile: return "token file " + c.data_path;
    case DataKind::TextFile: return "text file " + c.data_path;
  }
  return "?";
}

std::string byte_text(std::size_t bytes) {
  return fmt::format("{} B ({:.2f} MiB)", bytes, static_cast<double>(bytes) / (1 << 20));
}

}  // namespace strata::runtime
