// Reads a DeepSpeed config JSON into an ImportedJob: batch sizes (dp = train_batch_size /
// (micro x accumulation)), ZeRO stage, precision, gradient accumulation dtype, pipeline stages
// and activation checkpointing. The model comes from --model, tensor parallelism from --tp
// (Megatron-DeepSpeed's half of the job). Keys that change the job in ways strata does not
// model are refused by name; operational ones (optimizer, scheduler, logging) are listed.
#pragma once
#include <string>

#include "export/imported_job.h"

namespace strata::exports {

// DeepSpeed's stage-3 defaults, in elements (deepspeed/runtime/zero/config.py, unchanged
// from v0.5.0 f28432441bae1020157407a4eca1661e9fe35164 to v0.10.0
// f5c834a6e0eedd440af85b0f577ca9c8f5624630): a parameter this small stays whole on every
// rank (stage3_param_persistence_threshold; SoftwareStack::zero3_persist_params), and the
// prefetch coalesces the next modules' gathers up to stage3_prefetch_bucket_size
// (SoftwareStack::zero3_gather_bucket_params).
inline constexpr double kDeepSpeedPersistParams = 1e5;
inline constexpr double kDeepSpeedPrefetchBucketParams = 5e7;

ImportedJob import_deepspeed_config(const std::string& json_text, const std::string& source);

}  // namespace strata::exports
