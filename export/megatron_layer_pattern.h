// MegatronLayerPattern: Megatron-LM's per-layer pattern arguments (--moe-layer-freq) read
// back into strata's model. Megatron evaluates a Python list expression over digits,
// commas, brackets, parentheses, + and * (megatron/training/arguments.py moe_freq_type and
// _eval_pattern at d98e8a64), e.g. "([0]*3+[1]*58)" = 3 dense blocks, then 58 MoE blocks;
// a plain integer N makes every N-th block MoE.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata::exports {

// The 0/1 list a pattern evaluates to, Python semantics for + (concatenation, or integer
// sum) and * (repetition, or integer product); at most `max_len` entries. InputError names
// `flag` and the pattern for anything else (other characters, a non-list result, overflow).
std::vector<int> eval_layer_pattern(const std::string& pattern, std::size_t max_len,
                                    const std::string& flag, const std::string& source);

// The leading dense blocks of a --moe-layer-freq value for a model of `layers` blocks: "1"
// gives 0; a pattern must have `layers` entries, zeros first and ones after (the MoE
// layouts strata models). InputError otherwise, naming the flag.
std::int64_t first_dense_layers_from_moe_layer_freq(const std::string& value, std::int64_t layers,
                                                    const std::string& source);

}  // namespace strata::exports
