// OpBenchmark: times the runtime's own non-GEMM kernels (norms, activations, rotary
// embedding, the attention core with its head split/merge, residual adds, the
// vocab-parallel cross-entropy) at the shapes a model's ops have on one tensor-parallel
// rank, for `strata calibrate` to write into a device profile's op_table. Each row's
// `work` is costmodel::op_work of the op it times, so the cost model looks the op up by
// the same key. GEMMs are not timed here (the GEMM table covers them); the embedding
// lookup is left to the roofline.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "costmodel/device_profile.h"
#include "kernels/profiler/timing.h"
#include "models/model_spec.h"

namespace strata::calibration {

struct OpBenchmarkOptions {
  std::vector<int> tp_degrees{1};                 // shard shapes as each TP degree does
  std::vector<std::int64_t> micro_batches{1};     // sequences per micro-batch
  // The profiler's policy (warm-up, reps fitted to a budget, median), as for GEMMs.
  kernels::profiler::TimingOptions timing{1, 3, 30, 0.05};
};

// One timed op: the profile row and what it was, for the calibrate table.
struct OpBenchmarkRow {
  costmodel::OpSample sample;
  std::string shape;  // e.g. "mb 4, tp 2: (128 x 256)"
};

// Rows for every (model, tp, micro-batch) the options list; duplicate work sizes are
// kept (the cost model merges them). `progress(done, total)` is called after each op.
// InputError when a TP degree does not divide the model's heads / ffn.
std::vector<OpBenchmarkRow> benchmark_ops(const models::ModelSpec& spec, const OpBenchmarkOptions& options,
                                          const std::function<void(int, int)>& progress = {});

}  // namespace strata::calibration
