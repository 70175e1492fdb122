// TrainingLog: the step time a real training job printed, read from its log in the
// framework's own format, for `strata calibrate --from-log` and runs files whose
// `measured:` names a log. Formats, each from the framework's source:
//   megatron    Megatron-LM training_log() (megatron/training/training.py):
//               " iteration {:8d}/{:8d} | ... | elapsed time per iteration (ms): {:.1f} | ..."
//               (the mean over the log interval, milliseconds)
//   nemo        NeMo / PyTorch Lightning progress lines and NeMo 2 loggers:
//               "train_step_timing in s=3.130" or "train_step_timing in s: 7.126" (seconds)
//   torchtitan  TorchTitan's MetricsProcessor.log (torchtitan/components/metrics.py):
//               "step: {step:2}  loss: ...  memory: ...GiB(...%)  tps: {round(tps):,}  ..."
//               (tokens per second per GPU, ANSI colour codes around the fields)
// The first `skip` timing lines are warm-up (compilation, allocator growth, data loader
// start) and are dropped while later ones remain; the rest give the median.
#pragma once
#include <string>
#include <vector>

namespace strata::calibration {

struct TrainingLog {
  std::string format;          // megatron | nemo | torchtitan
  std::vector<double> values;  // every timing line: seconds per step, or tokens/s per GPU (torchtitan)
  int skipped = 0;             // warm-up lines dropped
  double median = 0;           // over the lines kept
  bool tokens_per_s_per_gpu() const { return format == "torchtitan"; }
};

// InputError (naming `source`) when no line of a known format holds a step timing, or a
// timing is not a positive number.
TrainingLog parse_training_log(const std::string& text, const std::string& source, int skip = 1);
TrainingLog read_training_log(const std::string& path, int skip = 1);

}  // namespace strata::calibration
