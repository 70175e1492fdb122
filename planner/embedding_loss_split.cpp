#include "planner/embedding_loss_split.h"

#include "common/errors.h"

namespace strata::planner {

std::vector<std::int64_t> embedding_loss_split_blocks(std::int64_t layers, int pp, int vpp,
                                                      const EmbeddingLossSplit& split, const std::string& what) {
  if (!split.embedding && !split.loss)
    input_error("{}: neither --account-for-embedding-in-pipeline-split nor --account-for-loss-in-pipeline-split "
                "is set",
                what);
  if (pp < 1 || vpp < 1) input_error("{}: pipeline size ({}) and virtual stages ({}) must be >= 1", what, pp, vpp);
  const std::int64_t counted = layers + (split.embedding ? 1 : 0) + (split.loss ? 1 : 0);
  if (counted % pp != 0)
    input_error("{}: --num-layers ({}) plus the embedding and loss counted by --account-for-*-in-pipeline-split "
                "({}) must be divisible by the pipeline size ({})",
                what, layers, counted, pp);
  if ((counted / pp) % vpp != 0)
    input_error("{}: the {} layers per pipeline rank (with the embedding and loss counted) must be divisible by "
                "the virtual stages per pipeline rank ({})",
                what, counted / pp, vpp);
  const std::size_t stages = static_cast<std::size_t>(pp) * vpp;
  std::vector<std::int64_t> out(stages, counted / static_cast<std::int64_t>(stages));
  // At least one counted layer per virtual stage, so neither end goes below 0 blocks (with a
  // single stage, both flags leave it exactly the model's blocks).
  if (split.embedding) --out.front();
  if (split.loss) --out.back();
  return out;
}

std::optional<EmbeddingLossSplit> embedding_loss_split_of(const std::vector<std::int64_t>& blocks,
                                                          std::int64_t layers, int pp, int vpp) {
  if (pp < 1 || vpp < 1 || blocks.size() != static_cast<std::size_t>(pp) * vpp) return std::nullopt;
  for (const EmbeddingLossSplit split : {EmbeddingLossSplit{true, true}, EmbeddingLossSplit{true, false},
                                         EmbeddingLossSplit{false, true}}) {
    // The split exists only where Megatron-LM's divisibility rules hold (else _blocks refuses).
    const std::int64_t counted = layers + (split.embedding ? 1 : 0) + (split.loss ? 1 : 0);
    if (counted % pp != 0 || (counted / pp) % vpp != 0) continue;
    if (embedding_loss_split_blocks(layers, pp, vpp, split, "") == blocks) return split;
  }
  return std::nullopt;
}

}  // namespace strata::planner
