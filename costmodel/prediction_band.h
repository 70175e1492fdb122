// PredictionBand: how far to trust a step-time prediction, from how far the cost model
// missed published runs of the same software stack on the same device. The residuals
// are the committed output of `strata_bench_prediction_error` (costmodel/stacks/
// residuals.yaml, one entry per validation set); a job outside the validated range of
// model size, GPU count or sequence length gets a warning naming the range.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace strata::costmodel {

struct ValidationResidual {
  std::string stack, device, set;   // set: the validation file and its source
  int rows = 0;
  double mape = 0;                  // mean |predicted - published| / published
  double max_abs = 0;               // largest |error|
  double bias = 0;                  // mean signed error (negative: predicted too fast)
  double err_min = 0, err_max = 0;  // most negative and most positive signed error
  double params_b_min = 0, params_b_max = 0;
  long long gpus_min = 0, gpus_max = 0;
  long long seq_min = 0, seq_max = 0;
  // The entry describes predictions with the device's fitted training losses (held-out
  // rows of `calibrate --from-runs`), not the kernel tables alone.
  bool fitted = false;
  // The rows are of mixture-of-experts models (`models: moe`): their residuals make the band
  // of MoE predictions, the others (`models: dense`, the default) that of dense ones.
  bool moe = false;
  // Highest model-FLOP utilisation a published row of the set reached (0: not given), of its
  // 16-bit rows and of its FP8 rows apart: FP8 GEMMs run at twice the 16-bit peak MFU counts
  // against, so FP8 runs reach MFUs no 16-bit run can.
  double mfu_max = 0, mfu_max_fp8 = 0;
};

// Every committed residual entry.
const std::vector<ValidationResidual>& validation_residuals();

struct PredictionBand {
  // Relative half-width of the band (max |error| of the validation rows); nullopt when
  // the stack was never validated on this device.
  std::optional<double> relative;
  // Where the real step time fell relative to the prediction on those rows, as
  // published / predicted, widened to include the prediction itself (1): a cost model
  // that missed every row on the fast side gets a band above its prediction, not a
  // symmetric one that never happened. Set with `relative`.
  double low = 1, high = 1;
  std::string basis;                  // "megatron-2021 on a100-sxm-80gb: 10 rows, MAPE ..."
  std::vector<std::string> warnings;  // outside the validated range, or not validated
};

// `fitted`: the prediction charges fitted training losses (DeviceProfile::training_losses):
// only entries with `profile: fitted` describe it; without, only entries without. `moe`: the
// model has routed experts: only MoE entries describe it (all-to-all, expert GEMMs and routing
// are costs dense rows never tested); a dense model only dense entries.
PredictionBand prediction_band(const std::string& stack, const std::string& device,
                               double params_b, long long gpus, long long seq, bool fitted = false,
                               bool moe = false);

// A warning when a predicted MFU exceeds the highest any validated published run of the same
// precision class (16-bit, or FP8 with `fp8`) on the device reached (over every residual entry
// of the device that gives it) even at the slow end of its band (mfu / band_high, band_high =
// published / predicted, >= 1); empty otherwise, and when no run of that class is known.
std::string mfu_warning(const std::string& device, double mfu, double band_high = 1.0, bool fp8 = false);

}  // namespace strata::costmodel
