// One strategy asked for by its sizes, as `strata simulate --tp 8 --pp 4 --gpus 256 ...`
// gives it: what is left out is derived. dp is what the GPU count leaves after tp x pp x cp
// (1 without a count), the global batch a default rounded up to a multiple of micro-batch x
// dp, the schedule interleaved with virtual stages and 1F1B without.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "planner/strategy.h"

namespace strata::planner {

struct LayoutRequest {
  int gpus = 0;  // 0: not given
  int tp = 1, pp = 1, cp = 1, dp = 0, vpp = 1, zero = 0;  // dp 0: derived
  int ep = 1, etp = 1;  // expert parallel, expert tensor parallel (MoE models)
  std::int64_t micro_batch = 1, global_batch = 0;  // global_batch 0: derived
  std::string recompute = "none";
  std::vector<std::string> recompute_modules{};  // Megatron-Core names, with recompute selective
  int recompute_layers = 0;                      // with recompute full: first n blocks per chunk
  std::string schedule{};                        // empty: derived
  bool sequence_parallel = false;
  bool ep_overlap = false;
  bool delay_wgrad = false;  // with ep_overlap: --delay-wgrad-compute
};

// The strategy `r` asks for, with `precision` ("" for the stack's). Each size it derives
// (dp without a GPU count, the global batch from `default_global_batch`) is added to
// `defaults` as a line for the report. InputError naming --gpus when the count is not a
// multiple of tp x pp x cp or differs from dp x tp x pp x cp, or when the world exceeds
// INT_MAX GPUs.
Strategy derive_strategy(const LayoutRequest& r, std::int64_t default_global_batch, const std::string& precision,
                         std::vector<std::string>& defaults);

}  // namespace strata::planner
