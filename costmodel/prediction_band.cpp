#include "costmodel/prediction_band.h"

#include <algorithm>
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
                       "gpus", "seq", "profile"});
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
        v.fitted = e.get_enum("profile", {"fitted", "tables"}, "tables") == "fitted";
        out.push_back(std::move(v));
      }
    }
    return out;
  }();
  return all;
}

PredictionBand prediction_band(const std::string& stack, const std::string& device,
                               double params_b, long long gpus, long long seq, bool fitted) {
  PredictionBand b;
  const ValidationResidual* best = nullptr;
  for (const auto& v : validation_residuals())
    if (v.stack == stack && v.device == device && v.fitted == fitted && (!best || v.rows > best->rows)) best = &v;
  if (!best) {
    b.warnings.push_back(fmt::format(
        "stack {} has not been validated on {}{}: no uncertainty band (validated: see "
        "costmodel/stacks/residuals.yaml)",
        stack, device, fitted ? " with fitted training losses" : ""));
    return b;
  }
  b.relative = best->max_abs;
  // error e = (predicted - published) / published, so published / predicted = 1 / (1 + e).
  b.low = std::min(1.0, 1.0 / (1.0 + best->err_max));
  b.high = std::max(1.0, 1.0 / (1.0 + best->err_min));
  b.basis = fmt::format("{} on {}: {} published rows ({}), MAPE {:.1f}%, max {:.1f}%, mean {:+.1f}%",
                        stack, device, best->rows, best->set, 100 * best->mape,
                        100 * best->max_abs, 100 * best->bias);
  auto outside = [&](const char* what, double x, double lo, double hi) {
    if (x < lo * 0.999 || x > hi * 1.001)
      b.warnings.push_back(fmt::format("{} {:g} is outside the validated range {:g}..{:g} of {}",
                                       what, x, lo, hi, best->set));
  };
  outside("model size (B params)", params_b, best->params_b_min, best->params_b_max);
  outside("GPU count", static_cast<double>(gpus), static_cast<double>(best->gpus_min),
          static_cast<double>(best->gpus_max));
  outside("sequence length", static_cast<double>(seq), static_cast<double>(best->seq_min),
          static_cast<double>(best->seq_max));
  return b;
}

}  // namespace strata::costmodel
