#include "costmodel/op_table.h"

#include "common/errors.h"

namespace strata::costmodel {

MeasuredOpTable::MeasuredOpTable(const std::vector<OpSample>& rows) {
  for (const auto& r : rows) {
    const auto kind = models::op_kind_from_string(r.op);
    if (!kind || models::is_gemm(*kind))
      input_error("op_table row op '{}' is not a non-GEMM op kind", r.op);
    if (!(r.work > 0 && r.fwd_us > 0 && r.bwd_us > 0))
      input_error("op_table row for '{}' needs positive work, fwd_us and bwd_us", r.op);
    curves_[*kind].add(r.work, r.fwd_us * 1e-6, r.bwd_us * 1e-6);
  }
}

std::optional<OpTableEstimate> MeasuredOpTable::estimate(models::OpKind kind, double work) const {
  auto it = curves_.find(kind);
  if (it == curves_.end()) return std::nullopt;
  const auto v = it->second.at(work);
  return OpTableEstimate{v.fwd_s, v.bwd_s, v.exact ? TimeSource::Measured : TimeSource::Interpolated};
}

}  // namespace strata::costmodel
