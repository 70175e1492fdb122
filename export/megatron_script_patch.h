// The user's own Megatron-LM launch script with the plan's parallel layout in it
// (`strata export --to megatron --from JOB.sh`): every line, comment, variable and flag the
// user wrote stays as written, except the flags that say how the job is parallelised and
// batched (megatron_parallel_flags below), which take the plan's values; flags of that set
// the plan does not use are removed, and those it adds are placed next to the last one found
// (one per line when the script writes one flag per line, in a bash array or with `\`
// continuations; else on the same line).
#pragma once
#include <string>
#include <vector>

#include "export/export_formats.h"

namespace strata::exports {

// The Megatron-LM flags the patch owns: tensor / pipeline / virtual-pipeline / context /
// expert parallel sizes and stage maps, the MoE token dispatcher (the expert-parallel
// exchange), sequence parallelism, rank mapping, micro and global
// batch, recompute, distributed optimizer and Megatron-FSDP, the communication overlaps, and
// --train-iters when the plan's export writes it.
const std::vector<std::string>& megatron_parallel_flags();

struct ScriptPatch {
  std::string text;                  // the patched script
  std::vector<std::string> changes;  // "job.sh:12: --tensor-model-parallel-size 8 -> 4", ...
};

// Patches `script` (read from `source`, for messages) with the parallel flags of `plan_args`
// (megatron_args of the plan). InputError, naming the file, line and flag, when a model-shape
// flag written as a number disagrees with the plan's model (--num-layers, --hidden-size, ...:
// the plan is for another model), when a parallel flag's value is not on its own line, and
// when the script holds neither a parallel flag nor a *.py training script to place them by.
ScriptPatch patch_megatron_script(const std::string& script, const std::string& source,
                                  const std::vector<Arg>& plan_args);

}  // namespace strata::exports
