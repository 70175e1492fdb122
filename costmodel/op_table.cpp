#include "costmodel/op_table.h"

#include <algorithm>
#include <cmath>

#include "common/errors.h"

namespace strata::costmodel {

MeasuredOpTable::MeasuredOpTable(const std::vector<OpSample>& rows) {
  struct Sum {
    double log_fwd = 0, log_bwd = 0;
    int n = 0;
  };
  std::map<models::OpKind, std::map<double, Sum>> merged;
  for (const auto& r : rows) {
    const auto kind = models::op_kind_from_string(r.op);
    if (!kind || models::is_gemm(*kind))
      input_error("op_table row op '{}' is not a non-GEMM op kind", r.op);
    if (!(r.work > 0 && r.fwd_us > 0 && r.bwd_us > 0))
      input_error("op_table row for '{}' needs positive work, fwd_us and bwd_us", r.op);
    Sum& s = merged[*kind][r.work];
    s.log_fwd += std::log(r.fwd_us * 1e-6);
    s.log_bwd += std::log(r.bwd_us * 1e-6);
    ++s.n;
  }
  for (const auto& [kind, by_work] : merged) {
    auto& curve = curves_[kind];
    for (const auto& [work, s] : by_work)
      curve.push_back(Point{std::log(work), s.log_fwd / s.n, s.log_bwd / s.n});
  }
}

std::optional<OpTableEstimate> MeasuredOpTable::estimate(models::OpKind kind, double work) const {
  auto it = curves_.find(kind);
  if (it == curves_.end()) return std::nullopt;
  OpTableEstimate e;
  if (!(work > 0)) return e;
  const auto& c = it->second;
  const double x = std::log(work);
  auto upper = std::lower_bound(c.begin(), c.end(), x,
                                [](const Point& p, double v) { return p.log_work < v; });
  if (upper != c.end() && upper->log_work == x) {
    e.fwd_s = std::exp(upper->log_fwd);
    e.bwd_s = std::exp(upper->log_bwd);
    return e;
  }
  e.source = TimeSource::Interpolated;
  if (upper == c.begin() || upper == c.end()) {  // outside: constant time per unit of work
    const Point& p = upper == c.begin() ? c.front() : c.back();
    e.fwd_s = std::exp(p.log_fwd + x - p.log_work);
    e.bwd_s = std::exp(p.log_bwd + x - p.log_work);
    return e;
  }
  const Point& lo = *(upper - 1);
  const Point& hi = *upper;
  const double f = (x - lo.log_work) / (hi.log_work - lo.log_work);
  e.fwd_s = std::exp(lo.log_fwd + f * (hi.log_fwd - lo.log_fwd));
  e.bwd_s = std::exp(lo.log_bwd + f * (hi.log_bwd - lo.log_bwd));
  return e;
}

}  // namespace strata::costmodel
