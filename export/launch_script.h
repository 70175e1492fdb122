// A launch script as people write them, flattened to the one command the importer reads.
// Megatron-LM's own examples (examples/gpt3/train_gpt3_175b_distributed.sh) keep the
// arguments in bash arrays and variables:
//   GPUS_PER_NODE=8
//   GPT_MODEL_ARGS=( --num-layers 96 --hidden-size 12288 ... )
//   torchrun --nproc_per_node $GPUS_PER_NODE pretrain_gpt.py ${GPT_MODEL_ARGS[@]} ...
// Plain assignments (NAME=value, export NAME=value), arrays NAME=( ... ) over any number of
// lines, and integer arithmetic $(( ... )) on them are read in order; in the command that
// runs a .py script, $NAME, ${NAME} and ${NAME[@]} are replaced by their values (a quoted
// "${NAME[@]}" gives one word per element, as bash does). Anything
// else a shell would do (command substitution, conditionals, functions) is not run: a
// variable it would set stays as written ("$1"), which only matters if a modelled flag
// takes it, and then the importer names the flag and the value.
#pragma once
#include <string>

namespace strata::exports {

// The script's launch command with its variables expanded, one line; `text` unchanged when
// it assigns no variable (a plain command line). InputError (naming `source`) on an array
// that never closes.
std::string expand_launch_script(const std::string& text, const std::string& source);

}  // namespace strata::exports
