// Pure statistics for `strata validate`: median, mean absolute percentage error and
// Spearman's rank correlation (ties get their average rank).
#pragma once
#include <optional>
#include <vector>

namespace strata::validation {

// Median of `values` (mean of the two middle values for an even count); NaN if empty.
double median(std::vector<double> values);

// Median of `step_times_s` after dropping the first `warmup` entries; NaN if none remain.
double median_after_warmup(const std::vector<double>& step_times_s, int warmup);

// Mean over i of |predicted_i − measured_i| / measured_i × 100. Sizes must match and
// measured values be > 0 (InternalError otherwise); NaN if empty.
double mape_pct(const std::vector<double>& predicted, const std::vector<double>& measured);

// Ranks 1..n (ascending); tied values share the mean of the ranks they span.
std::vector<double> average_ranks(const std::vector<double>& values);

// Spearman's rho = Pearson correlation of the average ranks. nullopt when fewer than 2
// values or when either side is constant (correlation undefined).
std::optional<double> spearman(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace strata::validation
