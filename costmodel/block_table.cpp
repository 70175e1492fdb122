#include "costmodel/block_table.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/errors.h"

namespace strata::costmodel {

std::string block_signature(const models::ModelSpec& spec) {
  return fmt::format("hidden {}, heads {}, kv_heads {}, ffn {}, seq {}, {}, {}, {}", spec.hidden, spec.heads,
                     spec.kv_heads, spec.ffn, spec.seq_len, models::to_string(spec.norm),
                     models::to_string(spec.activation), models::to_string(spec.positions));
}

MeasuredBlockTable::MeasuredBlockTable(const std::vector<BlockSample>& rows) {
  for (const auto& r : rows) {
    if (r.block.empty()) input_error("block_table row needs a block signature");
    if (r.tp < 1 || r.micro_batch < 1)
      input_error("block_table row '{}' needs tp >= 1 and micro_batch >= 1", r.block);
    if (!(r.fwd_us > 0 && r.bwd_us > 0))
      input_error("block_table row '{}' needs positive fwd_us and bwd_us", r.block);
    const Key key{r.block, r.tp, r.sequence_parallel && r.tp > 1};
    curves_[key].add(static_cast<double>(r.micro_batch), r.fwd_us * 1e-6, r.bwd_us * 1e-6);
    if (r.fwd_with_tp_us > 0 || r.bwd_with_tp_us > 0) {
      if (r.tp == 1) input_error("block_table row '{}' has with-group times at tp 1", r.block);
      if (!(r.fwd_with_tp_us > 0 && r.bwd_with_tp_us > 0))
        input_error("block_table row '{}' needs both fwd_with_tp_us and bwd_with_tp_us", r.block);
      with_tp_[key].add(static_cast<double>(r.micro_batch), r.fwd_with_tp_us * 1e-6, r.bwd_with_tp_us * 1e-6);
    }
  }
}

std::optional<BlockTableEstimate> MeasuredBlockTable::estimate(const std::string& signature, int tp,
                                                               bool sequence_parallel,
                                                               std::int64_t micro_batch) const {
  const Key key{signature, tp, sequence_parallel && tp > 1};
  auto it = curves_.find(key);
  if (it == curves_.end()) return std::nullopt;
  const double mb = static_cast<double>(micro_batch);
  const auto v = it->second.at(mb);
  BlockTableEstimate e{v.fwd_s, v.bwd_s, v.exact ? TimeSource::Measured : TimeSource::Interpolated};
  auto w = with_tp_.find(key);
  if (w != with_tp_.end()) {
    const auto t = w->second.at(mb);
    e.has_tp = true;
    e.tp_fwd_s = std::max(0.0, t.fwd_s - v.fwd_s);
    e.tp_bwd_s = std::max(0.0, t.bwd_s - v.bwd_s);
  }
  return e;
}

}  // namespace strata::costmodel
