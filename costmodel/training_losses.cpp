#include "costmodel/training_losses.h"

#include <cmath>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "costmodel/detail/yaml_emit.h"

namespace strata::costmodel {

const std::array<LossParameter, kLossParameters>& loss_parameters() {
  // Priors and ranges: ../shared/calibration-priors.md (component measurements, each with
  // its source); the sd is the half-width of the cited range over about 2.
  static const std::array<LossParameter, kLossParameters> p{{
      {"gemm_sustain", "1", 1.0, 0.93, 0.04, 0.78, 1.0,
       "sustained training clocks vs short runs: 0.93 (0.85-1.00; 0.80-0.92 for 500 W parts); H100 "
       "peak 989 TF/s is defined at 1.83 GHz against a 1.98 GHz boost (calibration-priors.md)"},
      {"attention_sustain", "1", 1.0, 1.0, 0.10, 0.70, 1.15,
       "FlashAttention forward d=128 spans 430-621 TF/s on H100 with sequence 512-16k (pytorch/"
       "benchmark ff65cb67): +-15% around the profile's attention efficiency"},
      {"host_gap_us", "us", 0.0, 1.0, 2.0, 0.0, 30.0,
       "host/launch gap per kernel: ~4 us eager, ~1 us with CUDA graphs (vTrain keeps measured gaps; "
       "range 1-30 us, calibration-priors.md)"},
      {"network_efficiency", "1", 1.0, 1.0, 0.08, 0.60, 1.10,
       "NDR 400G per NIC busbw 46-48 GB/s = 0.92-0.97 of line rate (NVIDIA/nccl-tests#290, #267), "
       "relative to the cluster file's efficiency"},
      {"step_latency_us", "us", 0.0, 2.5, 1.5, 0.0, 6.0,
       "latency per ring step across nodes ~2.5 us per rank (SimAI: 66/135/200/320 us at 16/32/64/128 "
       "ranks), range 1-6 us"},
      {"jitter_cv", "1", 0.0, 0.0075, 0.005, 0.0, 0.03,
       "rank-to-rank step jitter cv 0.005-0.01 (est.), sync cost mu * cv * sqrt(2 ln N) "
       "(calibration-priors.md)"},
      {"memory_sustain", "1", 1.0, 1.0, 0.10, 0.60, 1.10,
       "a streaming kernel on A100 80GB reaches 1.80 of 2.04 TB/s (88%, Nsight Compute) and about 90% "
       "at best (NVIDIA developer forums, 'Trouble to reach peak bandwidth of A100'): the profile's "
       "memory efficiency is that idle ceiling; +-10% around it, down to 0.6 for eager elementwise kernels"},
      {"moe_host_ms", "ms", 0.0, 3.0, 1.5, 0.0, 10.0,
       "CPU time to issue one MoE layer's forward in eager PyTorch (est.): on the order of 10 us of "
       "CPU per eager op (calibration-priors.md) x the 100-300 ops, module calls and hooks of a "
       "Megatron-Core attention block, router, dispatcher, permutes and grouped GEMMs; the Megatron-"
       "Core MoE work names host-boundedness as the compute wall of fine-grained MoE"},
  }};
  return p;
}

int loss_parameter_index(const std::string& name) {
  const auto& ps = loss_parameters();
  for (int i = 0; i < kLossParameters; ++i)
    if (name == ps[static_cast<std::size_t>(i)].name) return i;
  return -1;
}

double straggler_s(double iteration_s, long long ranks, double cv) {
  if (ranks < 2 || !(cv > 0) || !(iteration_s > 0)) return 0;
  return iteration_s * cv * std::sqrt(2.0 * std::log(static_cast<double>(ranks)));
}

TrainingLosses parse_training_losses(const YamlReader& r) {
  r.expect_map();
  TrainingLosses t;
  t.present = true;
  if (!r.has("source")) r.fail("source", "training_losses needs a source (how the values were obtained)");
  YamlReader ps = r.child("parameters");
  ps.expect_map();
  for (const auto& kv : ps.node()) {
    const std::string name = kv.first.as<std::string>("");
    const int i = loss_parameter_index(name);
    if (i < 0) {
      std::string known;
      for (const auto& p : loss_parameters()) known += (known.empty() ? "" : ", ") + std::string(p.name);
      ps.fail(name, fmt::format("unknown training-loss parameter (known: {})", known));
    }
    const auto idx = static_cast<std::size_t>(i);
    YamlReader one = ps.child(name);
    one.expect_keys({"value", "std_error", "status", "prior", "prior_sd", "range", "unit", "source"});
    const LossParameter& spec = loss_parameters()[idx];
    const double v = one.get_double("value");
    if (!(v >= spec.lo && v <= spec.hi))
      one.fail("value", fmt::format("{} is outside the range of {} [{}, {}] {}", v, name, spec.lo, spec.hi,
                                    spec.unit));
    t.value[idx] = v;
    t.std_error[idx] = one.get_double("std_error", 0.0);
    if (!(t.std_error[idx] >= 0 && std::isfinite(t.std_error[idx])))
      one.fail("std_error", fmt::format("{} must be a finite number >= 0", t.std_error[idx]));
    t.status[idx] = one.get_enum("status", {"prior", "fitted", "at_bound", "measured", "neutral"}, "fitted");
  }
  // Everything but `parameters` is the fit's record, kept as written.
  YAML::Node record;
  for (const auto& kv : r.node())
    if (kv.first.as<std::string>("") != "parameters") record[kv.first.as<std::string>("")] = kv.second;
  YAML::Emitter e;
  e << record;
  std::istringstream in(e.c_str());
  for (std::string line; std::getline(in, line);) t.record_yaml += line + "\n";
  return t;
}

std::string training_losses_yaml(const TrainingLosses& t, int indent) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  std::string o;
  std::istringstream in(t.record_yaml);
  for (std::string line; std::getline(in, line);)
    o += pad + line + "\n";
  o += pad + "parameters:\n";
  const auto& ps = loss_parameters();
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const LossParameter& p = ps[i];
    o += pad + fmt::format("  {}: {{value: {}, std_error: {}, status: {}, unit: {}, prior: {}, prior_sd: {}, "
                           "range: [{}, {}], source: {}}}\n",
                           p.name, detail::yaml_number(t.value[i]), detail::yaml_number(t.std_error[i]),
                           t.status[i], detail::yaml_quote(p.unit), detail::yaml_number(p.prior),
                           detail::yaml_number(p.prior_sd), detail::yaml_number(p.lo), detail::yaml_number(p.hi),
                           detail::yaml_quote(p.source));
  }
  return o;
}

}  // namespace strata::costmodel
