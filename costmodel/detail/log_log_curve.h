// LogLogCurve: measured (size, forward time, backward time) points of one kernel as a
// curve in log-log space, shared by the measured op and block tables:
//   - a measured size returns its measured times (exact);
//   - between two measured sizes, log(time) is linear in log(size), so the result is
//     monotone between two ordered points;
//   - outside the measured range the nearest point's time per unit of size is scaled
//     linearly: the work of these kernels grows linearly with their size.
// Duplicate sizes (repeated calibration rows) are merged by geometric mean.
#pragma once
#include <map>
#include <vector>

namespace strata::costmodel::detail {

class LogLogCurve {
 public:
  // size, fwd_s and bwd_s must be positive (the table parsers check).
  void add(double size, double fwd_s, double bwd_s);

  struct Value {
    double fwd_s = 0, bwd_s = 0;
    bool exact = false;  // a measured size
  };
  // The curve must have at least one point; size <= 0 costs nothing (exact).
  Value at(double size) const;

 private:
  struct Sum {
    double log_fwd = 0, log_bwd = 0;
    int n = 0;
  };
  std::map<double, Sum> points_;  // by size
};

}  // namespace strata::costmodel::detail
