// TrainingLosses: what a long training job loses against an idle-GPU kernel table, as a
// few named, physical parameters. Each has a unit, a cited prior and a plausible range
// (../shared/calibration-priors.md, repeated in loss_parameters()); `strata calibrate
// --from-runs` fits them to measured step times (calibration/fit_runs.h) and stores the
// fit (rows, priors, values with standard errors, residuals, cross-validation) in the
// profile's `training_losses:` section. A profile without the section charges no loss:
// every parameter at its neutral value (1 for the rates, 0 for the gaps and jitter).
//
// Where each one enters the cost model:
//   gemm_sustain        GemmCost: every GEMM time / gemm_sustain (clocks a device holds under
//                       a long job's power limit, against the short runs a table is made of).
//                       Not applied to a GEMM table measured with `calibrate --sustain`: a
//                       measurement replaces the fitted value.
//   attention_sustain   OpCost: the flash attention rate x attention_sustain.
//   host_gap_us         OpCost: idle GPU time per launched kernel (GEMM or not) in eager mode,
//                       on top of the profile's kernel_overhead_us; not on measured op rows.
//   network_efficiency  CollectiveCost: the inter-node busbw x network_efficiency (not on
//                       measured collective curves).
//   step_latency_us     CollectiveCost: extra latency per ring step across nodes (NCCL proxy
//                       and protocol at scale), on top of the link's latency_us.
//   jitter_cv           Simulator: the straggler cost of synchronising N ranks every step, the
//                       expected maximum of N jittery step times: t * cv * sqrt(2 ln N).
//   memory_sustain      OpCost and the simulator: the bandwidth of memory-bound kernels (norms,
//                       activations, residuals, the unfused attention's softmax and dropout,
//                       loss, optimizer and gradient-buffer passes) x memory_sustain; not GEMMs,
//                       not measured op rows.
//   moe_host_ms         Simulator: the CPU time eager PyTorch needs to issue one MoE transformer
//                       layer's forward. On a stack whose dispatcher reads the routing to the
//                       host every MoE layer (SoftwareStack::moe_host_sync) the CPU cannot run
//                       ahead of the GPU, so such a layer's forward (and its re-run under
//                       recompute) takes at least this long: max(GPU time, moe_host_ms).
#pragma once
#include <array>
#include <string>

#include "common/yaml_reader.h"

namespace strata::costmodel {

inline constexpr int kLossParameters = 8;

// The description of one parameter: what the fit reads as its prior.
struct LossParameter {
  const char* name;
  const char* unit;
  double neutral;   // the value that charges nothing (a profile without the section)
  double prior;     // cited central value
  double prior_sd;  // width of the prior (same unit), the MAP penalty's scale
  double lo, hi;    // plausible range: the fit is bounded to it
  const char* source;
};
const std::array<LossParameter, kLossParameters>& loss_parameters();
// Index of a parameter by name, or -1.
int loss_parameter_index(const std::string& name);

struct TrainingLosses {
  // In loss_parameters() order: gemm_sustain, attention_sustain, host_gap_us,
  // network_efficiency, step_latency_us, jitter_cv, memory_sustain, moe_host_ms.
  std::array<double, kLossParameters> value{1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0};
  std::array<double, kLossParameters> std_error{};  // 0: not fitted
  // Per parameter: "prior" (frozen at its prior), "fitted", "at_bound" (the fit ended on a
  // bound: a missing mechanism, not a parameter), "measured" (a device measurement replaced
  // it), "neutral" (no section).
  std::array<std::string, kLossParameters> status{"neutral", "neutral", "neutral", "neutral",
                                                  "neutral", "neutral", "neutral", "neutral"};
  bool present = false;  // the profile has a training_losses section
  // The fit's record (source, rows, residuals, cross-validation) as the YAML block it was
  // read from or written as, kept verbatim so that a profile round-trips; not indented.
  std::string record_yaml;

  double gemm_sustain() const { return value[0]; }
  double attention_sustain() const { return value[1]; }
  double host_gap_s() const { return value[2] * 1e-6; }
  double network_efficiency() const { return value[3]; }
  double step_latency_s() const { return value[4] * 1e-6; }
  double jitter_cv() const { return value[5]; }
  double memory_sustain() const { return value[6]; }
  double moe_host_s() const { return value[7] * 1e-3; }
};

// Straggler cost (seconds) of an iteration of `iteration_s` synchronised over `ranks`
// ranks: the expected maximum of `ranks` step times with coefficient of variation cv,
// about iteration_s * cv * sqrt(2 ln ranks) (Gumbel limit of the normal maximum).
double straggler_s(double iteration_s, long long ranks, double cv);

// The `training_losses:` section: parameters: {name: {value, std_error?, status?}, ...} plus
// free-form record keys (source, rows, cross_validation, ...) kept verbatim. Values outside
// their range, unknown parameter names or a missing source are errors naming the key.
TrainingLosses parse_training_losses(const YamlReader& r);
// The section's body (without the `training_losses:` line), indented by `indent` spaces.
std::string training_losses_yaml(const TrainingLosses& t, int indent);

}  // namespace strata::costmodel
