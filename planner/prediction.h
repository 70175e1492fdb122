// Prediction: what the simulator says one iteration of a strategy costs.
#pragma once
#include <string>
#include <vector>

namespace strata::planner {

struct Breakdown {  // seconds on the critical path of one iteration
  double compute = 0, tp_comm = 0, pp_comm = 0, dp_comm = 0, optimizer = 0, bubble = 0;
  double cp_comm = 0;  // context-parallel K/V exchange the attention does not hide
  double ep_comm = 0;  // MoE token dispatch / combine (all-to-all, and all-gather / reduce-scatter over etp)
  // Waiting for the slowest of the ranks that synchronise every step (costmodel/
  // training_losses.h jitter_cv): 0 without a fitted profile.
  double straggler = 0;
  // The GPU idle while the host issues a MoE layer it synced on (SoftwareStack::moe_host_sync,
  // training_losses.h moe_host_ms); part of what the compute steps last, not in `compute`.
  double host_wait = 0;
};

// Memory of one rank of the pipeline stage with the most (GiB), by what holds it.
struct MemoryBreakdown {
  int stage = 0;
  double weights = 0, grads = 0, optimizer = 0, activations = 0, logits = 0, reserve = 0;
  int in_flight = 0;  // (micro-batch, chunk) forwards whose activations the stage holds
  // Parts of the above (costmodel::StageMemory): routed experts' weights, their gradients and
  // optimizer state (sharded over edp), the MoE layers' routed-token activations (dispatch
  // buffers, expert activations), multi-token prediction's activations and extra logits.
  double expert_weights = 0, expert_grads_optimizer = 0, dispatch_activations = 0, mtp = 0;
  // The optimizer step's fp32 gradient copy, held only while activations and logits are
  // freed (costmodel::StageMemory::step_grad_copy_bytes), and the part of it beyond them that
  // the peak adds (usually 0; a part of the sum).
  double step_grad_copy = 0, step_extra = 0;
  // Full recompute: the re-run layer's activations (costmodel::StageMemory::recompute_layer_bytes);
  // activations holds what it needs beyond the logits.
  double recompute_layer = 0;
};

struct Prediction {
  std::string stack;                   // software stack the prediction assumes
  std::string precision;               // GEMM precision simulated (bf16 | fp16 | fp8 ...)
  // Relative half-width of the band around iteration_s from the validation residuals of
  // this stack on this device (costmodel/prediction_band.h); < 0: never validated.
  double uncertainty = -1;
  // The band as published / predicted step time on the validation rows (costmodel::
  // PredictionBand::low/high): the real step likely lies in iteration_s x [low, high].
  double uncertainty_low = 1, uncertainty_high = 1;
  std::string uncertainty_basis;
  double iteration_s = 0;
  double tokens_per_s = 0;
  double model_tflops_per_gpu = 0;     // model FLOPs (6·N·tokens-style, no recompute) / time / gpus
  double hardware_tflops_per_gpu = 0;  // executed: incl. recompute, flash attention's causal half
  double mfu = 0;                      // model TFLOP/s / peak
  double peak_memory_gib = 0;          // max over ranks
  std::vector<double> stage_memory_gib;  // per pipeline stage
  MemoryBreakdown peak_memory;         // the stage of peak_memory_gib, by part
  double bubble_fraction = 0;          // idle share of the iteration on the busiest stage
  Breakdown breakdown_s;
  bool fits_memory = true;
  std::vector<std::string> notes;      // which numbers came from measurement vs datasheet
};

}  // namespace strata::planner
