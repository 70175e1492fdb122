// Uneven pipeline stages as Megatron-LM runs them: the first and / or last pipeline rank
// holds a given number of transformer blocks (--decoder-first-pipeline-num-layers F,
// --decoder-last-pipeline-num-layers Lc), the other ranks share the rest evenly. The
// embedding rides with the first rank's blocks, the final norm + LM head + loss with the
// last rank's, so a split that gives those ranks fewer blocks accounts for them.
//
// Megatron-LM main d98e8a64 (NVIDIA/Megatron-LM, 2026-08-22):
//  - megatron/core/transformer/transformer_config.py __post_init__ ("Uneven PP"): F > 0 and
//    Lc > 0 when set; with virtual stages vpp, F, Lc and the middle ranks' blocks each
//    divisible by vpp; the middle ranks (pp minus the ranks given) share L - F - Lc evenly,
//    and there are middle blocks exactly when there are middle ranks. Not combinable with
//    --account-for-embedding/loss-in-pipeline-split or a --pipeline-model-parallel-layout.
//  - megatron/training/arguments.py: with uneven stages the virtual stages are given by
//    --num-virtual-stages-per-pipeline-rank (not --num-layers-per-virtual-pipeline-stage).
//  - megatron/core/transformer/transformer_block.py get_num_layers_to_build and
//    transformer_layer.py get_transformer_layer_offset: every model chunk of rank p holds
//    blocks(p) / vpp blocks, and chunk c of rank p follows chunk c of rank p - 1 (virtual
//    stage v = c * pp + p, strata's numbering).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::planner {

struct FirstLastStages {
  std::optional<std::int64_t> first, last;  // blocks on pipeline rank 0 / pp - 1; unset: even
  bool operator==(const FirstLastStages&) const = default;
};

// Transformer blocks per virtual stage (v = chunk * pp + rank) of `layers` blocks on pp x vpp
// virtual stages with the given first / last counts, as Megatron-LM builds them. At least one
// of first / last must be set and pp >= 2. InputError naming the rule Megatron-LM enforces;
// `what` prefixes the message (e.g. the file the flags came from).
std::vector<std::int64_t> first_last_stage_blocks(std::int64_t layers, int pp, int vpp,
                                                  const FirstLastStages& fl, const std::string& what);

// The layer groups of each virtual stage for blocks per virtual stage: the embedding (group 0)
// with the first, the head (group layers + 1) with the last.
std::vector<std::vector<int>> stage_layers_from_blocks(const std::vector<std::int64_t>& blocks,
                                                       std::int64_t layers);

// The first / last counts whose Megatron-LM split is exactly `blocks` (per virtual stage, pp
// x vpp of them, pp >= 2), both set; nullopt when no first / last pair gives it (the middle
// ranks differ, a rank's chunks differ, or the split is even: no flags needed).
std::optional<FirstLastStages> first_last_of(const std::vector<std::int64_t>& blocks, int pp, int vpp);

}  // namespace strata::planner
