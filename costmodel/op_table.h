// MeasuredOpTable: time of the runtime's non-GEMM ops (norms, activations, the
// attention core, ...) from a profile's measured op_table, written by `strata calibrate`
// from the runtime's own kernels. Per op kind, rows (work, fwd, bwd) are a LogLogCurve
// over work (detail/log_log_curve.h): measured sizes are Measured, everything else
// Interpolated.
#pragma once
#include <map>
#include <optional>
#include <vector>

#include "costmodel/detail/log_log_curve.h"
#include "costmodel/device_profile.h"
#include "costmodel/gemm_cost.h"
#include "models/op.h"

namespace strata::costmodel {

struct OpTableEstimate {
  double fwd_s = 0;
  double bwd_s = 0;
  TimeSource source = TimeSource::Measured;
};

class MeasuredOpTable {
 public:
  explicit MeasuredOpTable(const std::vector<OpSample>& rows);

  bool has(models::OpKind kind) const { return curves_.count(kind) > 0; }
  // nullopt when the table has no rows for `kind`; work <= 0 costs nothing.
  std::optional<OpTableEstimate> estimate(models::OpKind kind, double work) const;

 private:
  std::map<models::OpKind, detail::LogLogCurve> curves_;
};

}  // namespace strata::costmodel
