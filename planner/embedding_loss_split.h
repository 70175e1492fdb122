// Megatron-LM's other uneven pipeline split: --account-for-embedding-in-pipeline-split and
// --account-for-loss-in-pipeline-split count the embedding and / or the loss (final norm,
// LM head, cross-entropy) as one more layer each, split L + e + l "layers" evenly over the
// pp x vpp virtual stages, and build one transformer block fewer on the virtual stage that
// holds the embedding (rank 0, chunk 0) and on the one that holds the loss (rank pp - 1,
// chunk vpp - 1). With 94 blocks on pp 8 x vpp 4: 96 / 32 = 3 per chunk, the first chunk
// embedding + 2 blocks, the last 2 blocks + head.
//
// Megatron-LM main d98e8a64 (NVIDIA/Megatron-LM, 2026-08-22):
//  - megatron/core/transformer/transformer_block.py get_num_layers_to_build: the count and
//    the "- 1" on the first / last virtual stage (a stage may end with 0 blocks: only the
//    embedding or only the loss).
//  - megatron/core/transformer/transformer_config.py __post_init__: L + e + l divisible by pp
//    and, with virtual stages, (L + e + l) / pp divisible by vpp; not combinable with
//    --decoder-first/last-pipeline-num-layers or --pipeline-model-parallel-layout.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::planner {

struct EmbeddingLossSplit {
  bool embedding = false, loss = false;  // the two --account-for-*-in-pipeline-split flags
  bool operator==(const EmbeddingLossSplit&) const = default;
};

// Transformer blocks per virtual stage (v = chunk * pp + rank) as Megatron-LM builds them.
// At least one flag set; InputError naming the rule Megatron-LM enforces, prefixed by `what`.
std::vector<std::int64_t> embedding_loss_split_blocks(std::int64_t layers, int pp, int vpp,
                                                      const EmbeddingLossSplit& split, const std::string& what);

// The flags whose split is exactly `blocks` (pp x vpp virtual stages of a `layers`-block
// model), nullopt when none gives it (the even split needs no flag).
std::optional<EmbeddingLossSplit> embedding_loss_split_of(const std::vector<std::int64_t>& blocks,
                                                          std::int64_t layers, int pp, int vpp);

}  // namespace strata::planner
