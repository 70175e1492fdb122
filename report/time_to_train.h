// Time to train: how long, how many GPU-hours and how much money a training run of N tokens
// takes with one predicted strategy (`--train-tokens`, `--goodput`, `--gpu-hour-price` on
// plan, simulate and compare). Plain arithmetic on a Prediction:
//   steps     = ceil(tokens / (global_batch x seq_len))
//   wall      = steps x step time / goodput
//   GPU-hours = gpus x wall / 3600,  cost = GPU-hours x price
// each with the range the prediction's uncertainty band gives (Prediction::uncertainty_low /
// uncertainty_high: published / predicted step time on the validation rows of the stack and
// device); without a band the range is the point value and `banded` is false.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "planner/prediction.h"
#include "planner/strategy.h"

namespace strata::report {

// What the user asked for; tokens == 0: nothing asked.
struct TrainingTarget {
  std::int64_t tokens = 0;
  double goodput = 1;         // share of wall time spent in productive steps, (0, 1]
  double gpu_hour_price = 0;  // USD per GPU-hour; 0: not given (no cost)
  bool given() const { return tokens > 0; }
};

// A value with the likely range around it (low == high == value without a band).
struct Ranged {
  double value = 0, low = 0, high = 0;
};

struct TimeToTrain {
  std::int64_t tokens = 0;           // asked for
  std::int64_t tokens_per_step = 0;  // global_batch x seq_len
  std::int64_t steps = 0;            // ceil(tokens / tokens_per_step)
  int gpus = 0;
  double goodput = 1;
  double gpu_hour_price = 0;         // 0: no cost
  bool banded = false;               // the ranges come from a validation band
  Ranged wall_s, days, gpu_hours, cost_usd;
};

TimeToTrain time_to_train(const planner::Strategy& s, const planner::Prediction& p,
                          std::int64_t seq_len, const TrainingTarget& target);

// "15T", "300B", "2.5e12", "7e9", "1.5M", "800k" (k/K, M, B/G, T, P; case-insensitive; the
// mantissa may be a decimal or carry an exponent) -> tokens. Throws InputError (without the
// flag name: the caller adds it) on anything else, on values < 1 and on values over 1e18.
std::int64_t parse_token_count(const std::string& text);
// A finite decimal number (no suffix); InputError naming what was expected otherwise.
double parse_finite_number(const std::string& text);
// The target of --train-tokens N [--gpu-hour-price USD] [--goodput F], each given as text
// or absent (nullopt); every bad value or missing --train-tokens is one InputError naming
// its flag.
TrainingTarget training_target(const std::optional<std::string>& tokens, const std::optional<std::string>& price,
                               const std::optional<std::string>& goodput);

// "12.3 days" (>= 1 day), "5.2 h" (< 1 day).
std::string format_duration_days(double days);
// "1.23M", "45.6k", "789": GPU-hours.
std::string format_gpu_hours(double hours);
// "$1.23M", "$45.6k", "$789".
std::string format_usd(double usd);
// "12.3 days (11.8 - 14.1)": the point, then the range when banded.
std::string format_ranged_days(const Ranged& days, bool banded);
// One line for people: "15T tokens = 1.79M steps of 1024 x 8192 tokens: 12.3 days (11.8 -
// 14.1) on 256 GPUs, 75.6k GPU-hours (72.5k - 86.6k), $151k (...) at $2/GPU-hour, goodput
// 0.9". No leading "# " or trailing newline.
std::string describe_time_to_train(const TimeToTrain& t);
// "15T" style, for headers: the largest suffix that keeps 3 significant digits.
std::string format_token_count(std::int64_t tokens);

// The `time_to_train` object of the JSON outputs: tokens, tokens_per_step, steps,
// tokens_trained, gpus, goodput, gpu_hour_price_usd (null when not given), banded, and for
// wall_s, wall_days, gpu_hours and cost_usd (null without a price) {value, low, high}.
nlohmann::ordered_json time_to_train_json(const TimeToTrain& t);

}  // namespace strata::report
