#include "validation/validate_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/errors.h"

namespace strata::validation {

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

double median_after_warmup(const std::vector<double>& t, int warmup) {
  const std::size_t skip = static_cast<std::size_t>(std::max(warmup, 0));
  if (t.size() <= skip) return NAN;
  return median(std::vector<double>(t.begin() + static_cast<std::ptrdiff_t>(skip), t.end()));
}

double mape_pct(const std::vector<double>& predicted, const std::vector<double>& measured) {
  STRATA_CHECK(predicted.size() == measured.size(), "({} predicted vs {} measured)", predicted.size(),
               measured.size());
  if (predicted.empty()) return NAN;
  double sum = 0;
  for (std::size_t i = 0; i < predicted.size(); ++i) {
    STRATA_CHECK(measured[i] > 0, "(measured[{}] = {})", i, measured[i]);
    sum += std::fabs(predicted[i] - measured[i]) / measured[i];
  }
  return sum / static_cast<double>(predicted.size()) * 100.0;
}

std::vector<double> average_ranks(const std::vector<double>& values) {
  const std::size_t n = values.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(n);
  std::size_t i = 0;
  while (i < n) {
    std::size_t j = i;
    while (j + 1 < n && values[order[j + 1]] == values[order[i]]) ++j;
    const double r = (static_cast<double>(i + 1) + static_cast<double>(j + 1)) / 2.0;  // mean of ranks i+1..j+1
    for (std::size_t k = i; k <= j; ++k) ranks[order[k]] = r;
    i = j + 1;
  }
  return ranks;
}

std::optional<double> spearman(const std::vector<double>& a, const std::vector<double>& b) {
  STRATA_CHECK(a.size() == b.size(), "({} vs {} values)", a.size(), b.size());
  if (a.size() < 2) return std::nullopt;
  const auto ra = average_ranks(a), rb = average_ranks(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  if (saa <= 0 || sbb <= 0) return std::nullopt;
  return sab / std::sqrt(saa * sbb);
}

}  // namespace strata::validation
