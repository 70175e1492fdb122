// BlockBenchmark: times the runtime's whole transformer block (runtime::TransformerBlock,
// forward then backward for one micro-batch on one tensor-parallel rank) at a model's
// shapes, for `strata calibrate --model` to write into a device profile's block_table
// (costmodel/block_table.h says why the cost model wants whole blocks).
//
// The block runs exactly as `strata train` runs it, with its TP collectives replaced by
// local stand-ins (an all-gather copies the local shard, all-reduces do nothing): its
// compute. When the calibrating ranks can form the TP group (options.tp_group), the
// block is timed a second time with the real group, all groups at once: compute plus
// the collectives as the runtime issues them, between kernels, with whatever waiting
// and contention that brings. Blocks are chained like a model chunk
// (forward through all, backward in reverse) so weights and activations leave the caches
// as in training; every rank under mpirun runs its own at the same time.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "costmodel/device_profile.h"
#include "kernels/backend.h"
#include "kernels/profiler/timing.h"
#include "models/model_spec.h"

namespace strata::calibration {

struct BlockBenchmarkOptions {
  std::vector<int> tp_degrees{1};               // each with and without sequence parallelism
  std::vector<std::int64_t> micro_batches{1};
  kernels::profiler::TimingOptions timing{1, 3, 30, 0.1};
  // Configurations whose parameters, gradients and activations would take more than
  // this are skipped (a CPU host calibrating a large model's shapes).
  double max_bytes = 2.0 * 1024 * 1024 * 1024;
  // Every rank that runs the benchmark at the same time (all must pass the same options;
  // repetition counts are agreed over it). Null: this rank alone.
  kernels::Communicator* sync = nullptr;
  // This rank's real TP group of `tp` ranks, or null when the ranks cannot form one.
  std::function<kernels::Communicator*(int tp)> tp_group;
};

struct BlockBenchmarkRow {
  costmodel::BlockSample sample;
  std::string model;  // the spec's name
  std::string shape;  // e.g. "mb 4, tp 2, sp"
};

// One row per (tp, sp, micro-batch) that fits; sequence parallelism only for tp > 1
// when the tokens divide by tp. InputError when a TP degree does not divide the model.
// `progress(done, total)` after each configuration; `skipped` (optional) receives one
// line per configuration left out for size.
std::vector<BlockBenchmarkRow> benchmark_blocks(const models::ModelSpec& spec, const BlockBenchmarkOptions& options,
                                                const std::function<void(int, int)>& progress = {},
                                                std::vector<std::string>* skipped = nullptr);

}  // namespace strata::calibration
