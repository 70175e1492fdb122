// Reads a DeepSpeed config JSON into an ImportedJob: batch sizes (dp = train_batch_size /
// (micro x accumulation)), ZeRO stage, precision, gradient accumulation dtype, pipeline stages
// and activation checkpointing. The model comes from --model, tensor parallelism from --tp
// (Megatron-DeepSpeed's half of the job). Keys that change the job in ways strata does not
// model are refused by name; operational ones (optimizer, scheduler, logging) are listed.
#pragma once
#include <string>

#include "export/imported_job.h"

namespace strata::exports {

ImportedJob import_deepspeed_config(const std::string& json_text, const std::string& source);

}  // namespace strata::exports
