// Reads the Megatron-LM command line a user runs (pretrain_gpt.py arguments, optionally after
// a torchrun / python -m torch.distributed.run prefix and environment assignments, with `\`
// continuations and `#` comments) into an ImportedJob: model shape (mixture of experts with
// --moe-layer-freq patterns, multi-latent attention, --kv-channels), parallel layout (expert
// parallel and expert tensor parallel, whose default is tp as in Megatron-LM), batch sizes,
// recompute, distributed optimizer, precision (FP8 as strategy.precision fp8) and overlap
// flags. Megatron-LM's own defaults apply to flags left out. The flags are those
// export_megatron writes (export/export_formats.h), so export -> import gives the plan back.
// A flag that changes the job in a way strata does not model is refused by name (InputError);
// purely operational flags (paths, logging, learning rate, ...) are listed in job.ignored.
#pragma once
#include <string>
#include <vector>

#include "export/imported_job.h"
#include "export/megatron_command_line.h"  // shell_words

namespace strata::exports {

ImportedJob import_megatron_args(const std::string& text, const std::string& source);

// The layer groups of each virtual stage of a --pipeline-model-parallel-layout string
// ("E,t*4|t*4|...|t,m,L") for `layers` blocks and `mtp_layers` MTP blocks; InputError naming
// `source` for a layout strata does not model.
std::vector<std::vector<int>> pipeline_layout_groups(const std::string& layout, std::int64_t layers,
                                                     std::int64_t mtp_layers, const std::string& source);

}  // namespace strata::exports
