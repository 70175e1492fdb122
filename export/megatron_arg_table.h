// How many values each Megatron-LM argument takes, from the framework's own argument table
// (export/frameworks/megatron_args.yaml, generated from megatron/training/arguments.py by
// export/frameworks/extract_names.py and embedded in the binary). The Megatron import reads
// flags it does not model by this arity, so a value left after a store_true flag, or a word
// after a one-value flag, is named instead of swallowed, and a flag Megatron-LM does not have
// (a typo, or another version's flag) is told apart from one strata does not model.
#pragma once
#include <optional>
#include <string>

namespace strata::exports {

enum class MegatronArity {
  None,  // store_true / store_false: no value
  One,   // int, float, str, or a type argparse converts
  Many,  // nargs: the words up to the next flag
};

// nullopt: not an argument of Megatron-LM at megatron_arg_table_commit().
std::optional<MegatronArity> megatron_arg_arity(const std::string& flag);
// The Megatron-LM commit the table was generated from (its `source.commit`).
const std::string& megatron_arg_table_commit();

}  // namespace strata::exports
