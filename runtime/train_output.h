// What a training job writes besides its checkpoints: the metrics file (one JSON line per
// step, the keys `strata validate` reads) and the pieces of its printed lines that both
// backends share. Used by run_training_job (train_job.h) and run_cuda_training_job
// (train_cuda_job.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "runtime/train_config.h"
#include "runtime/trainer.h"

namespace strata::runtime {

// One metrics line: step, loss, step_s, tokens_per_s, predicted_step_s (DESIGN.md), plus
// grad_norm, lr, gemm_s and dp_wait_s (the DP gradient reduction left after the backward
// pass), and "run" (the job's run id) when `run_id` is not empty. Ends in a newline.
std::string metrics_line(const StepStats& s, double predicted_step_s, const std::string& run_id = "");

// The lines of a metrics file's `text` whose step is <= `step`; a line that does not parse,
// such as one cut off by a killed job, is dropped too. `dropped` counts what went.
std::string metrics_up_to(const std::string& text, std::int64_t step, std::size_t& dropped);

// The --metrics file of a job, written by this job alone: it is locked (flock, exclusive,
// not waiting) before anything in it changes, so a second job on the same file stops with
// an error instead of interleaving its lines or truncating the first job's. Then it is
// emptied, or after --resume cut to the steps up to `resume_step` (metrics_up_to; what was
// dropped is printed), and each write appends one metrics_line, at once, so a killed job
// keeps its steps. The lock lasts as long as the object. Errors are InputErrors naming
// --metrics and the path.
class MetricsFile {
 public:
  MetricsFile(const std::string& path, std::string run_id, std::optional<std::int64_t> resume_step);
  ~MetricsFile();
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;
  void write(const StepStats& s, double predicted_step_s);

 private:
  void write_all(const std::string& bytes);
  std::string path_;
  std::string run_id_;
  int fd_ = -1;
};

// "synthetic", "token file PATH" or "text file PATH".
std::string data_description(const TrainConfig& c);
// Exact bytes with the MiB beside them for a reader: "436992 B (0.42 MiB)".
std::string byte_text(std::size_t bytes);

}  // namespace strata::runtime
