// MegatronLayerPattern: Megatron-LM's per-layer pattern arguments (--moe-layer-freq) read
// back into strata's model. Megatron evaluates a Python list expression over digits,
// commas, brackets, parentheses, + and * (megatron/training/arguments.py moe_freq_type and
// _eval_pattern at d98e8a64), e.g. "([0]*3+[1]*58)" = 3 dense blocks, then 58 MoE blocks;
// a plain integer N makes 0-based block i MoE when i % N == 0
// (megatron/core/models/gpt/gpt_layer_specs.py at d98e8a64).
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

// strata's layout of dense and MoE blocks (models::MoeSpec first_dense_layers, layer_step).
struct MoeLayerLayout {
  std::int64_t first_dense_layers = 0;
  std::int64_t layer_step = 1;
  bool operator==(const MoeLayerLayout&) const = default;
};

// The layout of a --moe-layer-freq value for a model of `layers` blocks: "1" gives every block
// MoE; a pattern must have `layers` entries and be one strata models: dense blocks first, then
// every layer_step-th block (1-based) MoE, e.g. "([0]*3+[1]*58)" (DeepSeek-V3: 3 dense, step
// 1) or "([0]*1+[1]*1)*24" (Llama-4 Maverick: step 2). An integer N > 1 is refused: Megatron
// makes 0-based block i MoE when i % N == 0 (blocks 1, N + 1, ... counted from 1), which is
// not that layout. InputError otherwise, naming the flag and the first block that differs.
MoeLayerLayout moe_layout_from_moe_layer_freq(const std::string& value, std::int64_t layers,
                                              const std::string& source);

// The --moe-layer-freq list pattern of a layout over `layers` blocks (the inverse of the
// above): "([0]*d+[1]*(layers-d))" for step 1, "[0]*d+([0]*(k-1)+[1]*1)*n+[0]*r" for step k.
std::string moe_layer_freq_pattern(const MoeLayerLayout& layout, std::int64_t layers);

}  // namespace strata::exports
