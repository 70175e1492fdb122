// TrainConfig: everything about a training run that is not the plan (the plan fixes the
// model and the layout): steps, seed, optimizer hyperparameters, data source, checkpoints.
// Set by `strata train` flags.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/adamw.h"
#include "runtime/context_parallel.h"
#include "runtime/data_loader.h"
#include "runtime/lr_schedule.h"

namespace strata::runtime {

struct TrainConfig {
  std::int64_t steps = 10;
  std::uint64_t seed = 1234;       // weights and synthetic data
  AdamWConfig adamw;              // adamw.lr is the peak of lr_schedule
  LrSchedule lr_schedule;
  double grad_clip = 1.0;          // global L2 norm; 0 = off
  DataKind data = DataKind::Synthetic;
  std::string data_path;           // token file or text file
  std::string checkpoint_dir;
  std::int64_t checkpoint_every = 0;  // 0 = only at the end when a directory is given
  bool resume = false;
  // Recorded in every checkpoint manifest (rank 0's); --resume replaces it with the id of
  // the checkpoint it continues. Empty: none recorded.
  std::string run_id;
  // Data-parallel gradient reduction: buckets of this many parameters (0 = the planner's
  // default, planner::default_grad_bucket_params, which the prediction assumes), started
  // during the last micro-batch's backward when overlap is on.
  std::int64_t grad_bucket_params = 0;
  bool overlap_grad_reduce = true;
  // ZeRO-3: all-gather the next component's parameters while the current one computes
  // (forward and backward), as the stack's zero_prefetch (costmodel/zero_sharding.h).
  bool zero_prefetch = true;
  // Context parallel: ring (Megatron-Core's default) or all-gather of K/V.
  CpKvExchange cp_kv_exchange = CpKvExchange::Ring;
};

}  // namespace strata::runtime
