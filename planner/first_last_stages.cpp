#include "planner/first_last_stages.h"

#include <algorithm>

#include "common/errors.h"

namespace strata::planner {

std::vector<std::int64_t> first_last_stage_blocks(std::int64_t layers, int pp, int vpp,
                                                  const FirstLastStages& fl, const std::string& what) {
  const char* flags = "--decoder-first/last-pipeline-num-layers";
  if (!fl.first && !fl.last) input_error("{}: {}: neither the first nor the last stage is given", what, flags);
  if (pp < 2) input_error("{}: {} need pipeline parallel size > 1 (got {})", what, flags, pp);
  if (vpp < 1) input_error("{}: virtual stages per pipeline rank ({}) must be >= 1", what, vpp);
  for (const auto& [name, count] : {std::pair{"--decoder-first-pipeline-num-layers", fl.first},
                                    std::pair{"--decoder-last-pipeline-num-layers", fl.last}}) {
    if (!count) continue;
    if (*count <= 0) input_error("{}: {} ({}) must be > 0", what, name, *count);
    if (*count > layers) input_error("{}: {} ({}) exceeds --num-layers ({})", what, name, *count, layers);
    if (*count % vpp != 0)
      input_error("{}: {} ({}) must be divisible by the virtual stages per pipeline rank ({})", what,
                  name, *count, vpp);
  }
  const int middle_ranks = pp - (fl.first ? 1 : 0) - (fl.last ? 1 : 0);
  const std::int64_t rest = layers - fl.first.value_or(0) - fl.last.value_or(0);
  if (rest < 0)
    input_error("{}: the first and last stage layers ({} + {}) exceed --num-layers ({})", what,
                fl.first.value_or(0), fl.last.value_or(0), layers);
  if ((rest > 0) != (middle_ranks > 0))
    input_error("{}: {} leave {} layers for {} middle pipeline ranks (Megatron-LM needs layers "
                "exactly when there are middle ranks)",
                what, flags, rest, middle_ranks);
  const std::int64_t each = middle_ranks > 0 ? rest / middle_ranks : 0;
  if (middle_ranks > 0 && rest % middle_ranks != 0)
    input_error("{}: the {} layers left by {} do not split evenly over the {} middle pipeline "
                "ranks",
                what, rest, flags, middle_ranks);
  if (middle_ranks > 0 && each % vpp != 0)
    input_error("{}: each middle pipeline rank's {} layers must be divisible by the virtual stages "
                "per pipeline rank ({})",
                what, each, vpp);
  std::vector<std::int64_t> rank_blocks(static_cast<std::size_t>(pp), each);
  if (fl.first) rank_blocks.front() = *fl.first;
  if (fl.last) rank_blocks.back() = *fl.last;
  std::vector<std::int64_t> out(static_cast<std::size_t>(pp) * vpp);
  for (int c = 0; c < vpp; ++c)
    for (int p = 0; p < pp; ++p)
      out[static_cast<std::size_t>(c) * pp + p] = rank_blocks[static_cast<std::size_t>(p)] / vpp;
  return out;
}

std::vector<std::vector<int>> stage_layers_from_blocks(const std::vector<std::int64_t>& blocks,
                                                       std::int64_t layers) {
  std::vector<std::vector<int>> out(blocks.size());
  int next = 1;
  for (std::size_t v = 0; v < blocks.size(); ++v) {
    if (v == 0) out[v].push_back(0);
    for (std::int64_t i = 0; i < blocks[v]; ++i) out[v].push_back(next++);
    if (v + 1 == blocks.size()) out[v].push_back(static_cast<int>(layers) + 1);
  }
  return out;
}

std::optional<FirstLastStages> first_last_of(const std::vector<std::int64_t>& blocks, int pp, int vpp) {
  if (pp < 2 || vpp < 1 || blocks.size() != static_cast<std::size_t>(pp) * vpp) return std::nullopt;
  if (std::any_of(blocks.begin(), blocks.end(), [](std::int64_t b) { return b < 1; })) return std::nullopt;
  // Every chunk of a rank holds that rank's blocks / vpp.
  for (int c = 1; c < vpp; ++c)
    for (int p = 0; p < pp; ++p)
      if (blocks[static_cast<std::size_t>(c) * pp + p] != blocks[static_cast<std::size_t>(p)]) return std::nullopt;
  for (int p = 2; p + 1 < pp; ++p)
    if (blocks[static_cast<std::size_t>(p)] != blocks[1]) return std::nullopt;
  const std::int64_t first = blocks.front(), last = blocks[static_cast<std::size_t>(pp) - 1];
  const bool even = pp == 2 ? first == last : first == blocks[1] && last == blocks[1];
  if (even) return std::nullopt;
  return FirstLastStages{first * vpp, last * vpp};
}

}  // namespace strata::planner
