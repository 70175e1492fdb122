#include "costmodel/gemm_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "common/enum_names.h"
#include "common/errors.h"

namespace strata::costmodel {

const char* to_string(TimeSource s) {
  constexpr EnumName<TimeSource> kNames[] = {
      {TimeSource::Measured, "measured"}, {TimeSource::Interpolated, "interpolated"}, {TimeSource::Roofline, "roofline"}};
  return enum_name(s, kNames);
}

namespace {

double gemm_flops(std::int64_t m, std::int64_t n, std::int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

}  // namespace

GemmCost::GemmCost(const DeviceProfile& profile)
    : gemm_efficiency_(profile.gemm_efficiency),
      sustain_(profile.effective_gemm_sustain()),
      fp8_fast_accum_speedup_(profile.fp8_fast_accum_speedup),
      memory_bytes_per_s_(profile.memory_bandwidth_gbps * 1e9 * profile.memory_efficiency) {
  for (const auto& [d, tf] : profile.peak_tflops) peak_flops_[d] = tf * 1e12;

  // Duplicate shapes (repeated calibration rows) are merged by geometric mean.
  std::map<DType, std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>,
                           std::pair<double, int>>> merged;
  std::map<DType, std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, double>> single;
  for (const auto& s : profile.gemm_table) {
    auto& e = merged[s.dtype][{s.m, s.n, s.k}];
    e.first += std::log(s.time_us * 1e-6);
    e.second += 1;
    single[s.dtype][{s.m, s.n, s.k}] = s.time_us * 1e-6;
  }
  for (const auto& [d, shapes] : merged) {
    Table& t = tables_[d];
    std::map<double, std::pair<double, int>> by_flops;  // flops -> sum log(flop/s), count
    for (const auto& [shape, acc] : shapes) {
      auto [m, n, k] = shape;
      // One row: its time exactly (no exp(log(x)) rounding); repeats: geometric mean.
      double time_s = acc.second == 1 ? single[d][shape] : std::exp(acc.first / acc.second);
      t.rows.push_back({m, n, k, time_s});
      double f = gemm_flops(m, n, k);
      auto& b = by_flops[f];
      b.first += std::log(f / time_s);
      b.second += 1;
    }
    for (const auto& [f, acc] : by_flops) t.curve.push_back({std::log(f), acc.first / acc.second});
  }
}

bool GemmCost::has_table(DType dtype) const { return tables_.count(dtype) > 0; }

bool GemmCost::measured(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) const {
  auto it = tables_.find(dtype);
  if (it == tables_.end()) return false;
  for (const Row& r : it->second.rows)
    if (r.m == m && r.n == n && r.k == k) return true;
  return false;
}

double GemmCost::roofline_time_s(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) const {
  auto it = peak_flops_.find(dtype);
  if (it == peak_flops_.end())
    input_error("device profile has no peak_tflops.{} for a {} GEMM", to_string(dtype),
                to_string(dtype));
  double flops = gemm_flops(m, n, k);
  double bytes = (static_cast<double>(m) * k + static_cast<double>(k) * n +
                  static_cast<double>(m) * n) * dtype_bytes(dtype);
  return std::max(flops / (it->second * gemm_efficiency_), bytes / memory_bytes_per_s_);
}

double GemmCost::time_s(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) const {
  return estimate(m, n, k, dtype).time_s;
}

GemmEstimate GemmCost::estimate(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype,
                                Accumulation accumulation) const {
  if (m < 1 || n < 1 || k < 1)
    input_error("GEMM shape (m {}, n {}, k {}) must have every dimension >= 1", m, n, k);
  const Shape shape{m, n, k, static_cast<int>(dtype), static_cast<int>(accumulation)};
  {
    std::lock_guard<std::mutex> lock(memo_.mutex);
    if (auto it = memo_.answers.find(shape); it != memo_.answers.end()) return it->second;
  }
  GemmEstimate e = table_estimate(m, n, k, dtype);
  if (dtype == DType::Fp8 && accumulation == Accumulation::Fast) e.time_s /= fp8_fast_accum_speedup_;
  // FP8 cap: never more than the tensor-core peak ratio faster than bf16 on the same
  // shape. The fp8 table is one published best-shape row, which the curve would hold for
  // every shape; small shapes reach that rate in bf16 no more than in fp8.
  const auto p8 = peak_flops_.find(DType::Fp8), p16 = peak_flops_.find(DType::Bf16);
  if (dtype == DType::Fp8 && p8 != peak_flops_.end() && p16 != peak_flops_.end()) {
    const GemmEstimate b = table_estimate(m, n, k, DType::Bf16);
    const double capped = b.time_s * p16->second / p8->second;
    if (capped > e.time_s) e = {capped, std::max(e.source, b.source)};  // the less direct source
  }
  e.time_s /= sustain_;  // clocks under a long job's power limit (training_losses.h)
  std::lock_guard<std::mutex> lock(memo_.mutex);
  memo_.answers.emplace(shape, e);
  return e;
}

std::size_t GemmCost::ShapeHash::operator()(const Shape& s) const {
  std::size_t h = 0;
  for (std::uint64_t v : {static_cast<std::uint64_t>(s.m), static_cast<std::uint64_t>(s.n),
                          static_cast<std::uint64_t>(s.k), static_cast<std::uint64_t>(s.dtype),
                          static_cast<std::uint64_t>(s.accumulation)})
    h = (h ^ std::hash<std::uint64_t>{}(v)) * 0x100000001b3ULL;
  return h;
}

GemmEstimate GemmCost::table_estimate(std::int64_t m, std::int64_t n, std::int64_t k,
                                      DType dtype) const {
  auto it = tables_.find(dtype);
  if (it == tables_.end()) return {roofline_time_s(m, n, k, dtype), TimeSource::Roofline};
  const Table& t = it->second;

  // 1 + 2: exact row, or the tightest bracket along one dimension with the other two equal.
  const std::int64_t q[3] = {m, n, k};
  const Row* lo[3] = {nullptr, nullptr, nullptr};
  const Row* hi[3] = {nullptr, nullptr, nullptr};
  for (const Row& r : t.rows) {
    const std::int64_t v[3] = {r.m, r.n, r.k};
    if (v[0] == q[0] && v[1] == q[1] && v[2] == q[2]) return {r.time_s, TimeSource::Measured};
    for (int d = 0; d < 3; ++d) {
      bool others_equal = true;
      for (int e = 0; e < 3; ++e) others_equal = others_equal && (e == d || v[e] == q[e]);
      if (!others_equal) continue;
      const std::int64_t* lo_v = nullptr;
      if (v[d] < q[d]) {
        if (lo[d]) lo_v = d == 0 ? &lo[d]->m : d == 1 ? &lo[d]->n : &lo[d]->k;
        if (!lo[d] || v[d] > *lo_v) lo[d] = &r;
      } else {
        if (hi[d]) lo_v = d == 0 ? &hi[d]->m : d == 1 ? &hi[d]->n : &hi[d]->k;
        if (!hi[d] || v[d] < *lo_v) hi[d] = &r;
      }
    }
  }
  int best = -1;
  double best_width = std::numeric_limits<double>::infinity();
  auto dim = [](const Row* r, int d) { return static_cast<double>(d == 0 ? r->m : d == 1 ? r->n : r->k); };
  for (int d = 0; d < 3; ++d) {
    if (!lo[d] || !hi[d]) continue;
    double w = std::log(dim(hi[d], d)) - std::log(dim(lo[d], d));
    if (w < best_width) best_width = w, best = d;
  }
  if (best >= 0) {
    double x0 = std::log(dim(lo[best], best)), x1 = std::log(dim(hi[best], best));
    double f = (std::log(static_cast<double>(q[best])) - x0) / (x1 - x0);
    double lt = std::log(lo[best]->time_s) + f * (std::log(hi[best]->time_s) - std::log(lo[best]->time_s));
    return {std::exp(lt), TimeSource::Interpolated};
  }

  // 3: achieved FLOP/s vs FLOPs, log-log linear between the neighbouring FLOP counts;
  // outside the table's FLOP range the nearest end's rate (a GEMM larger than any row
  // runs at the largest row's rate, not back at the roofline's flat efficiency). Never
  // faster than streaming the operands once: skinny shapes (k = head_dim) are memory bound.
  const double flops = gemm_flops(m, n, k);
  const double lf = std::log(flops);
  if (!t.curve.empty()) {
    double lrate;
    if (lf <= t.curve.front().log_flops) {
      lrate = t.curve.front().log_flops_per_s;
    } else if (lf >= t.curve.back().log_flops) {
      lrate = t.curve.back().log_flops_per_s;
    } else {
      auto up = std::lower_bound(t.curve.begin(), t.curve.end(), lf,
                                 [](const CurvePoint& p, double x) { return p.log_flops < x; });
      auto dn = up - 1;
      double f = (lf - dn->log_flops) / (up->log_flops - dn->log_flops);
      lrate = dn->log_flops_per_s + f * (up->log_flops_per_s - dn->log_flops_per_s);
    }
    const double bytes = (static_cast<double>(m) * k + static_cast<double>(k) * n +
                          static_cast<double>(m) * n) * dtype_bytes(dtype);
    return {std::max(flops / std::exp(lrate), bytes / memory_bytes_per_s_), TimeSource::Interpolated};
  }

  // 4: no rows for the dtype.
  return {roofline_time_s(m, n, k, dtype), TimeSource::Roofline};
}

GemmEstimate GemmCost::batched(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k,
                               DType dtype) const {
  if (batch < 1) input_error("batched GEMM count ({}) must be >= 1", batch);
  // A strided-batched GEMM fills the device like one GEMM with batch x m rows; each
  // member still reads its own operands.
  GemmEstimate e = estimate(batch * m, n, k, dtype);
  const double bytes = static_cast<double>(batch) *
                       (static_cast<double>(m) * k + static_cast<double>(k) * n +
                        static_cast<double>(m) * n) * dtype_bytes(dtype);
  e.time_s = std::max(e.time_s, bytes / memory_bytes_per_s_);
  return e;
}

}  // namespace strata::costmodel
