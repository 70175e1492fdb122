#include "report/time_to_train.h"

#include <cmath>
#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "common/checked_math.h"
#include "common/errors.h"
#include "report/report_data.h"

namespace strata::report {

namespace {

Ranged ranged(double value, const planner::Prediction& p, bool banded) {
  if (!banded) return {value, value, value};
  return {value, value * p.uncertainty_low, value * p.uncertainty_high};
}

Ranged scaled(const Ranged& r, double f) { return {r.value * f, r.low * f, r.high * f}; }

nlohmann::ordered_json ranged_json(const Ranged& r) {
  auto num = [](double v) {
    return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
  };
  return {{"value", num(r.value)}, {"low", num(r.low)}, {"high", num(r.high)}};
}

}  // namespace

TimeToTrain time_to_train(const planner::Strategy& s, const planner::Prediction& p,
                          std::int64_t seq_len, const TrainingTarget& target) {
  STRATA_CHECK(target.given(), "time_to_train without a token count");
  STRATA_CHECK(target.goodput > 0 && target.goodput <= 1, "goodput {} outside (0, 1]",
               target.goodput);
  STRATA_CHECK(s.global_batch > 0 && seq_len > 0, "time_to_train of an empty step");
  TimeToTrain t;
  t.tokens = target.tokens;
  t.tokens_per_step = checked_mul(s.global_batch, seq_len, "global batch x seq");
  t.steps = target.tokens / t.tokens_per_step + (target.tokens % t.tokens_per_step != 0 ? 1 : 0);
  t.gpus = s.gpus();
  t.goodput = target.goodput;
  t.gpu_hour_price = target.gpu_hour_price;
  t.banded = p.uncertainty >= 0;
  t.wall_s = ranged(static_cast<double>(t.steps) * p.iteration_s / target.goodput, p, t.banded);
  t.days = scaled(t.wall_s, 1.0 / 86400.0);
  t.gpu_hours = scaled(t.wall_s, static_cast<double>(t.gpus) / 3600.0);
  t.cost_usd = scaled(t.gpu_hours, target.gpu_hour_price);
  return t;
}

std::int64_t parse_token_count(const std::string& text) {
  const auto bad = [&](const char* why) -> std::int64_t {
    input_error("expected a token count such as 15T, 300B or 2.5e12, got '{}'{}", text, why);
  };
  std::string mantissa = text;
  double scale = 1;
  if (!mantissa.empty()) {
    switch (mantissa.back()) {
      case 'k': case 'K': scale = 1e3; break;
      case 'm': case 'M': scale = 1e6; break;
      case 'b': case 'B': case 'g': case 'G': scale = 1e9; break;
      case 't': case 'T': scale = 1e12; break;
      case 'p': case 'P': scale = 1e15; break;
      default: break;
    }
    if (scale != 1) mantissa.pop_back();
  }
  static const std::regex number(R"(^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$)");
  if (!std::regex_match(mantissa, number))
    return bad(" (digits with an optional k, M, B, T or P suffix)");
  const double v = std::strtod(mantissa.c_str(), nullptr) * scale;
  if (!std::isfinite(v) || v > 1e18) return bad(" (more than 1e18 tokens)");
  if (v < 1) return bad(" (at least one token)");
  return std::llround(v);
}

double parse_finite_number(const std::string& text) {
  static const std::regex number(R"(^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$)");
  if (!std::regex_match(text, number)) input_error("expected a number, got '{}'", text);
  const double v = std::strtod(text.c_str(), nullptr);
  if (!std::isfinite(v)) input_error("expected a finite number, got '{}'", text);
  return v;
}

TrainingTarget training_target(const std::optional<std::string>& tokens, const std::optional<std::string>& price,
                               const std::optional<std::string>& goodput) {
  TrainingTarget t;
  if (!tokens) {
    if (price) input_error("--gpu-hour-price needs --train-tokens (the tokens the run trains on)");
    if (goodput) input_error("--goodput needs --train-tokens (the tokens the run trains on)");
    return t;
  }
  const auto flagged = [](const char* flag, auto&& parse) {
    try {
      return parse();
    } catch (const InputError& e) {
      input_error("{}: {}", flag, e.what());
    }
  };
  t.tokens = flagged("--train-tokens", [&] { return parse_token_count(*tokens); });
  if (price) {
    t.gpu_hour_price = flagged("--gpu-hour-price", [&] { return parse_finite_number(*price); });
    if (!(t.gpu_hour_price > 0))
      input_error("--gpu-hour-price: expected a price in USD per GPU-hour > 0, got '{}'", *price);
  }
  if (goodput) {
    t.goodput = flagged("--goodput", [&] { return parse_finite_number(*goodput); });
    if (!(t.goodput > 0 && t.goodput <= 1))
      input_error("--goodput: expected a fraction 0 < F <= 1 (e.g. 0.9), got '{}'", *goodput);
  }
  return t;
}

std::string format_duration_days(double days) {
  if (!std::isfinite(days)) return "n/a";
  if (days >= 1000) return fmt::format("{:.0f} days", days);  // not 1.16e+03
  if (days >= 1) return fmt::format("{:.3g} days", days);
  return fmt::format("{:.3g} h", days * 24);
}

std::string format_gpu_hours(double hours) { return format_count(hours); }

std::string format_usd(double usd) { return "$" + format_count(usd); }

std::string format_token_count(std::int64_t tokens) {
  const double v = static_cast<double>(tokens);
  if (v >= 1e12) return fmt::format("{:.3g}T", v / 1e12);
  if (v >= 1e9) return fmt::format("{:.3g}B", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.3g}k", v / 1e3);
  return std::to_string(tokens);
}

std::string format_ranged_days(const Ranged& d, bool banded) {
  std::string out = format_duration_days(d.value);
  if (banded) {
    // The range in the point's unit, so "12.3 days (11.8 - 14.1)" reads at a glance.
    const bool in_days = d.value >= 1;
    const double f = in_days ? 1.0 : 24.0;
    out += d.value >= 1000 ? fmt::format(" ({:.0f} - {:.0f})", d.low, d.high)
                           : fmt::format(" ({:.3g} - {:.3g})", d.low * f, d.high * f);
  }
  return out;
}

std::string describe_time_to_train(const TimeToTrain& t) {
  auto range = [&](const Ranged& r, std::string (*fmt_one)(double)) {
    return t.banded ? fmt::format(" ({} - {})", fmt_one(r.low), fmt_one(r.high)) : std::string();
  };
  std::string out = fmt::format(
      "{} tokens = {} steps of {} tokens: {} on {} GPU{}, {} GPU-hours{}",
      format_token_count(t.tokens), format_count(static_cast<double>(t.steps)),
      format_count(static_cast<double>(t.tokens_per_step)), format_ranged_days(t.days, t.banded),
      t.gpus, t.gpus == 1 ? "" : "s", format_gpu_hours(t.gpu_hours.value),
      range(t.gpu_hours, &format_gpu_hours));
  if (t.gpu_hour_price > 0)
    out += fmt::format(", {}{} at ${:g}/GPU-hour", format_usd(t.cost_usd.value),
                       range(t.cost_usd, &format_usd), t.gpu_hour_price);
  out += fmt::format(", goodput {:g}", t.goodput);
  out += t.banded ? "; range from the prediction's uncertainty band"
                  : "; no range: this stack has not been validated on this device";
  return out;
}

nlohmann::ordered_json time_to_train_json(const TimeToTrain& t) {
  nlohmann::ordered_json j;
  j["tokens"] = t.tokens;
  j["tokens_per_step"] = t.tokens_per_step;
  j["steps"] = t.steps;
  j["tokens_trained"] = static_cast<double>(t.steps) * static_cast<double>(t.tokens_per_step);
  j["gpus"] = t.gpus;
  j["goodput"] = t.goodput;
  j["gpu_hour_price_usd"] = t.gpu_hour_price > 0 ? nlohmann::ordered_json(t.gpu_hour_price)
                                                 : nlohmann::ordered_json(nullptr);
  j["banded"] = t.banded;
  j["wall_s"] = ranged_json(t.wall_s);
  j["wall_days"] = ranged_json(t.days);
  j["gpu_hours"] = ranged_json(t.gpu_hours);
  j["cost_usd"] = t.gpu_hour_price > 0 ? ranged_json(t.cost_usd) : nlohmann::ordered_json(nullptr);
  return j;
}

}  // namespace strata::report
