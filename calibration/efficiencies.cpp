// Calibration step 3 (detail/calibration_steps.h), rank 0: the profile's compute dtype,
// the peaks when no datasheet gave them (the best measured throughput stands in, and says
// so), and the GEMM, attention and memory efficiencies with where each came from.
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "calibration/detail/calibration_steps.h"

namespace strata::calibration::detail {

namespace kp = strata::kernels::profiler;
using kernels::GemmDType;

void derive_efficiencies(const SweepPlan& plan, Measurements& m) {
  const std::vector<GemmDType>& dtypes = plan.dtypes;
  kp::ProfileInfo& info = m.info;
  // The efficiencies describe the dtype training runs in (fp32 on cpu, bf16 on cuda).
  GemmDType main_dtype = plan.backend == kernels::Backend::Cpu ? GemmDType::Fp32 : GemmDType::Bf16;
  if (std::find(dtypes.begin(), dtypes.end(), main_dtype) == dtypes.end()) main_dtype = dtypes.front();
  info.compute_dtype = to_string(main_dtype);
  if (info.peak_tflops.empty()) {
    // No datasheet peak for this device: the profile format needs one, so the best
    // measured throughput per dtype stands in (and says so).
    for (GemmDType d : dtypes) {
      double best = 0;
      for (const auto& g : m.gemms)
        if (g.ok() && g.dtype == d) best = std::max(best, g.tflops);
      if (best > 0) info.peak_tflops.push_back({d, best});
    }
    for (auto& g : m.gemms)
      for (const auto& [d, peak] : info.peak_tflops)
        if (g.dtype == d && peak > 0) g.efficiency = g.tflops / peak;
    m.ctx.peak = "no datasheet profile matches this device: peak_tflops = best measured TFLOP/s per dtype";
  }
  double gemm_eff = kp::median_gemm_efficiency(m.gemms, main_dtype);
  double attn_eff = kp::median_gemm_efficiency(m.gemms, main_dtype, 0, "attention");
  info.gemm_efficiency = gemm_eff > 0 ? std::min(gemm_eff, 1.0) : 0.8;
  info.attention_efficiency = attn_eff > 0 ? std::min(attn_eff, 1.0) : info.gemm_efficiency / 2;
  info.memory_efficiency = 1.0;
  info.memory_bandwidth_gbps = m.bw.gbps;
  // The format caps efficiencies at 1; a CPU whose cores run above the /proc/cpuinfo
  // clock (boost) measures more than 100% of that peak, and the source says so.
  auto capped = [](double e) {
    return e > 1.0 ? fmt::format(" = {:.3f}, capped at 1 (the peak uses the /proc/cpuinfo clock; the cores ran faster)", e)
                   : fmt::format(" = {:.3f}", e);
  };
  info.efficiency_provenance = {
      {"gemm", gemm_eff > 0 ? fmt::format("median achieved/peak of the measured {} GEMMs with >= 1 GFLOP{}",
                                          to_string(main_dtype), capped(gemm_eff))
                            : std::string("no GEMM measured: default 0.8 (estimate)")},
      {"attention", attn_eff > 0 ? fmt::format("median achieved/peak of the per-head attention GEMMs (QK^T and AV "
                                               "of the --model shapes; a proxy: softmax and masking not included){}",
                                               capped(attn_eff))
                                 : std::string("no --model given: half the GEMM efficiency (estimate)")},
      {"memory", "1.0: memory_bandwidth_gbps is itself an achieved (measured) copy bandwidth"},
      {"peak", m.ctx.peak}};
}

}  // namespace strata::calibration::detail
