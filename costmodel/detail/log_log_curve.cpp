#include "costmodel/detail/log_log_curve.h"

#include <cmath>
#include <iterator>

#include "common/errors.h"

namespace strata::costmodel::detail {

void LogLogCurve::add(double size, double fwd_s, double bwd_s) {
  Sum& s = points_[size];
  s.log_fwd += std::log(fwd_s);
  s.log_bwd += std::log(bwd_s);
  ++s.n;
}

LogLogCurve::Value LogLogCurve::at(double size) const {
  STRATA_CHECK(!points_.empty(), "LogLogCurve::at on an empty curve");
  Value v;
  if (!(size > 0)) {
    v.exact = true;
    return v;
  }
  auto mean = [](const Sum& s, bool fwd) { return (fwd ? s.log_fwd : s.log_bwd) / s.n; };
  auto upper = points_.lower_bound(size);
  if (upper != points_.end() && upper->first == size) {
    v.fwd_s = std::exp(mean(upper->second, true));
    v.bwd_s = std::exp(mean(upper->second, false));
    v.exact = true;
    return v;
  }
  const double x = std::log(size);
  if (upper == points_.begin() || upper == points_.end()) {  // outside: constant time per unit
    const auto& p = upper == points_.begin() ? *points_.begin() : *std::prev(points_.end());
    const double scale = x - std::log(p.first);
    v.fwd_s = std::exp(mean(p.second, true) + scale);
    v.bwd_s = std::exp(mean(p.second, false) + scale);
    return v;
  }
  const auto& lo = *std::prev(upper);
  const auto& hi = *upper;
  const double x0 = std::log(lo.first), x1 = std::log(hi.first);
  const double f = (x - x0) / (x1 - x0);
  auto lerp = [&](bool fwd) {
    const double a = mean(lo.second, fwd), b = mean(hi.second, fwd);
    return std::exp(a + f * (b - a));
  };
  v.fwd_s = lerp(true);
  v.bwd_s = lerp(false);
  return v;
}

}  // namespace strata::costmodel::detail
