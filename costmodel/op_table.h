// MeasuredOpTable: time of the runtime's non-GEMM ops (norms, activations, the
// attention core, ...) from a profile's measured op_table, written by `strata calibrate`
// from the runtime's own kernels. Per op kind, rows (work, fwd, bwd) are a curve in
// log-log space:
//   - a measured work size returns its measured times (source Measured);
//   - between two measured sizes, log(time) is linear in log(work) (Interpolated), so the
//     result is monotone between two ordered points;
//   - outside the measured range the nearest row's time per unit of work is scaled
//     linearly (Interpolated): elementwise work is linear in its size.
// Duplicate work sizes (repeated calibration rows) are merged by geometric mean.
#pragma once
#include <map>
#include <optional>
#include <vector>

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
  struct Point {
    double log_work, log_fwd, log_bwd;
  };
  std::map<models::OpKind, std::vector<Point>> curves_;  // sorted by log_work
};

}  // namespace strata::costmodel
