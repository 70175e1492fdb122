// What a training job writes besides its checkpoints: the metrics file (one JSON line per
// step, the keys `strata validate` reads) and the pieces of its printed lines that both
// backends share. Used by run_training_job (train_job.h) and run_cuda_training_job
// (train_cuda_job.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "runtime/train_config.h"
#include "runtime/trainer.h"

namespace strata::runtime {

// One metrics line: step, loss, step_s, tokens_per_s, predicted_step_s (DESIGN.md), plus
// grad_norm, lr, gemm_s and dp_wait_s (the DP gradient reduction left after the backward
// pass). Ends in a newline.
std::string metrics_line(const StepStats& s, double predicted_step_s);

// Keeps the lines of the metrics file at `path` whose step is <= `step` (a line that does
// not parse, such as one cut off by a killed job, is dropped too) and prints how many went.
// Only a regular file is rewritten (atomically); a missing one is left alone.
void trim_metrics(const std::string& path, std::int64_t step);

// The --metrics file of a job: opened (truncated, or appended to after --resume) when it
// is made, one metrics_line per write, flushed at once so a killed job keeps its steps.
// Errors are InputErrors naming --metrics and the path.
class MetricsFile {
 public:
  MetricsFile(const std::string& path, bool append);
  void write(const StepStats& s, double predicted_step_s);

 private:
  std::string path_;
  std::ofstream out_;
};

// "synthetic", "token file PATH" or "text file PATH".
std::string data_description(const TrainConfig& c);
// Exact bytes with the MiB beside them for a reader: "436992 B (0.42 MiB)".
std::string byte_text(std::size_t bytes);

}  // namespace strata::runtime
