#include "runtime/train_output.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "common/json_text.h"

namespace strata::runtime {

std::string metrics_line(const StepStats& s, double predicted_step_s, const std::string& run_id) {
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
  if (!run_id.empty()) j["run"] = run_id;
  return j.dump() + "\n";
}

std::string metrics_up_to(const std::string& text, std::int64_t step, std::size_t& dropped) {
  std::string kept;
  dropped = 0;
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
  return kept;
}

namespace {

std::string read_all(int fd, const std::string& path) {
  std::string text;
  char buf[1 << 16];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n < 0) input_error("--metrics {}: cannot read: {}", path, std::strerror(errno));
    if (n == 0) return text;
    text.append(buf, static_cast<std::size_t>(n));
    at += n;
  }
}

}  // namespace

MetricsFile::MetricsFile(const std::string& path, std::string run_id, std::optional<std::int64_t> resume_step)
    : path_(path), run_id_(std::move(run_id)) {
  // No O_TRUNC: nothing changes before the lock is held.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) input_error("--metrics {}: cannot open for writing: {}", path_, std::strerror(errno));
  struct stat st {};
  const bool regular = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
  if (!regular) return;  // a pipe or terminal: nothing to lock, trim or truncate
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    ::close(fd_);
    fd_ = -1;
    if (e == EWOULDBLOCK)
      input_error("--metrics {} is being written by another `strata train` job (it holds the file's "
                  "lock): wait for it to end or write the metrics to another file",
                  path_);
    input_error("--metrics {}: cannot lock: {}", path_, std::strerror(e));
  }
  if (!resume_step) {
    if (::ftruncate(fd_, 0) != 0) input_error("--metrics {}: cannot truncate: {}", path_, std::strerror(errno));
    return;
  }
  const std::string text = read_all(fd_, path_);
  std::size_t dropped = 0;
  const std::string kept = metrics_up_to(text, *resume_step, dropped);
  if (dropped == 0) return;
  // Usually the kept lines are the file's beginning: cutting it there rewrites nothing.
  const bool prefix = text.compare(0, kept.size(), kept) == 0;
  if (::ftruncate(fd_, prefix ? static_cast<off_t>(kept.size()) : 0) != 0)
    input_error("--metrics {}: cannot truncate: {}", path_, std::strerror(errno));
  if (!prefix) write_all(kept);
  fmt::print("--metrics {}: dropped {} line{} after step {} (the job that wrote them ran past its "
             "last checkpoint)\n", path_, dropped, dropped == 1 ? "" : "s", *resume_step);
}

MetricsFile::~MetricsFile() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

void MetricsFile::write_all(const std::string& bytes) {
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) input_error("--metrics {}: write failed: {}", path_, std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
}

void MetricsFile::write(const StepStats& s, double predicted_step_s) {
  write_all(metrics_line(s, predicted_step_s, run_id_));
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
