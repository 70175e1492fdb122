#include "costmodel/prediction_band.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "common/yaml_reader.h"

namespace strata::costmodel {

namespace detail {
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_residuals();
}  // namespace detail

const std::vector<ValidationResidual>& validation_residuals() {
  static const std::vector<ValidationResidual> all = [] {
    std::vector<ValidationResidual> out;
    for (const auto& [stem, text] : detail::embedded_residuals()) {
      const std::string source = fmt::format("costmodel/stacks/{}.yaml", stem);
      YamlReader r(parse_yaml(std::string(text), source), source);
      r.expect_keys({"residuals"});
      YamlReader list = r.child("residuals");
      for (std::size_t i = 0; i < list.size(); ++i) {
        YamlReader e = list.element(i);
        e.expect_keys({"stack", "device", "set", "rows", "mape", "max_abs", "bias", "err", "params_b",
                       "gpus", "seq", "profile", "mfu_max", "mfu_max_fp8", "models"});
        ValidationResidual v;
        v.stack = e.get_string("stack");
        v.device = e.get_string("device");
        v.set = e.get_string("set");
        v.rows = static_cast<int>(e.get_int_in("rows", 1, 1000000));
        v.mape = e.get_double("mape");
        v.max_abs = e.get_double("max_abs");
        v.bias = e.get_double("bias");
        auto range = [&](const char* key, auto* lo, auto* hi) {
          YamlReader p = e.child(key);
          p.expect_sequence();
          if (p.size() != 2) p.fail("", "expected [min, max]");
          *lo = p.element(0).node().as<std::remove_pointer_t<decltype(lo)>>();
          *hi = p.element(1).node().as<std::remove_pointer_t<decltype(hi)>>();
        };
        range("err", &v.err_min, &v.err_max);
        if (!(v.err_min > -1 && v.err_min <= v.err_max))
          e.fail("err", "expected [min, max] signed errors with -1 < min <= max");
        range("params_b", &v.params_b_min, &v.params_b_max);
        range("gpus", &v.gpus_min, &v.gpus_max);
        range("seq", &v.seq_min, &v.seq_max);
        v.mfu_max = e.get_double("mfu_max", 0.0);
        v.mfu_max_fp8 = e.get_double("mfu_max_fp8", 0.0);
        v.fitted = e.get_enum("profile", {"fitted", "tables"}, "tables") == "fitted";
        v.moe = e.get_enum("models", {"dense", "moe"}, "dense") == "moe";
        out.push_back(std::move(v));
      }
    }
    return out;
  }();
  return all;
}

std::string mfu_warning(const std::string& device, double mfu, double band_high, bool fp8) {
  const auto ceiling = [fp8](const ValidationResidual& v) { return fp8 ? v.mfu_max_fp8 : v.mfu_max; };
  const ValidationResidual* top = nullptr;
  for (const auto& v : validation_residuals())
    if (v.device == device && ceiling(v) > 0 && (!top || ceiling(v) > ceiling(*top))) top = &v;
  const double slow_end = mfu / std::max(1.0, band_high);
  if (!top || !(slow_end > ceiling(*top))) return "";
  return fmt::format("warning: predicted MFU {:.1f}% ({:.1f}% at the slow end of its band) is above the highest of "
                     "the published {} runs on {} that strata is validated against ({:.1f}%, {}): treat the step time "
                     "as optimistic",
                     100 * mfu, 100 * slow_end, fp8 ? "FP8" : "16-bit", device, 100 * ceiling(*top), top->set);
}

PredictionBand prediction_band(const std::string& stack, const std::string& device,
                               double params_b, long long gpus, long long seq, bool fitted, bool moe) {
  PredictionBand b;
  // Every set validating this stack on this device (held-out sources of a fit are one set
  // each): the band covers all their rows, the validated range is their union.
  ValidationResidual u;
  std::string sets, worst_set;  // worst_set: the set with the largest miss
  double sum_abs = 0, sum_signed = 0;
  for (const auto& v : validation_residuals()) {
    if (v.stack != stack || v.device != device || v.fitted != fitted || v.moe != moe) continue;
    if (u.rows == 0 || v.max_abs > u.max_abs) worst_set = v.set;
    if (u.rows == 0) {
      u = v;
    } else {
      u.max_abs = std::max(u.max_abs, v.max_abs);
      u.err_min = std::min(u.err_min, v.err_min), u.err_max = std::max(u.err_max, v.err_max);
      u.params_b_min = std::min(u.params_b_min, v.params_b_min), u.params_b_max = std::max(u.params_b_max, v.params_b_max);
      u.gpus_min = std::min(u.gpus_min, v.gpus_min), u.gpus_max = std::max(u.gpus_max, v.gpus_max);
      u.seq_min = std::min(u.seq_min, v.seq_min), u.seq_max = std::max(u.seq_max, v.seq_max);
      u.rows += v.rows;
    }
    sum_abs += v.mape * v.rows;
    sum_signed += v.bias * v.rows;
    sets += (sets.empty() ? "" : "; ") + v.set;
  }
  if (u.rows == 0) {
    b.warnings.push_back(fmt::format(
        "stack {} has not been validated{} on {}{}: no uncertainty band (validated: see "
        "costmodel/stacks/residuals.yaml)",
        stack, moe ? " on mixture-of-experts models" : "", device, fitted ? " with fitted training losses" : ""));
    return b;
  }
  b.relative = u.max_abs;
  // error e = (predicted - published) / published, so published / predicted = 1 / (1 + e).
  b.low = std::min(1.0, 1.0 / (1.0 + u.err_max));
  b.high = std::max(1.0, 1.0 / (1.0 + u.err_min));
  b.basis = fmt::format("{} on {}: {} published rows ({}), MAPE {:.1f}%, max {:.1f}%{}, mean {:+.1f}%", stack, device,
                        u.rows, sets, 100 * sum_abs / u.rows, 100 * u.max_abs,
                        sets == worst_set ? "" : fmt::format(" ({})", worst_set), 100 * sum_signed / u.rows);
  // Counts print whole (1048576, not 1.04858e+06); sizes in billions keep their decimals.
  auto plain_number = [](double v) {
    return v == std::floor(v) && std::fabs(v) < 1e15 ? fmt::format("{:.0f}", v) : fmt::format("{:.4g}", v);
  };
  auto outside = [&](const char* what, double x, double lo, double hi) {
    if (x < lo * 0.999 || x > hi * 1.001)
      b.warnings.push_back(fmt::format("{} {} is outside the validated range {}..{} of {}", what,
                                       plain_number(x), plain_number(lo), plain_number(hi), sets));
  };
  outside("model size (B params)", params_b, u.params_b_min, u.params_b_max);
  outside("GPU count", static_cast<double>(gpus), static_cast<double>(u.gpus_min),
          static_cast<double>(u.gpus_max));
  outside("sequence length", static_cast<double>(seq), static_cast<double>(u.seq_min),
          static_cast<double>(u.seq_max));
  return b;
}

}  // namespace strata::costmodel
