#include "report/no_plan_reason.h"

#include <fmt/format.h>

#include "models/model_stats.h"

namespace strata::report {

std::string no_plan_reason(const models::ModelSpec& model, const std::string& cluster_name,
                           const costmodel::ClusterSpec& cluster, int gpus, const planner::SearchResult& r) {
  const std::string what = fmt::format("no strategy for {} fits on {} GPU{} of {}", model.name, gpus,
                                       gpus == 1 ? "" : "s", cluster_name);
  if (r.closest_infeasible) {
    const auto& c = *r.closest_infeasible;
    const auto& s = c.strategy;
    const double usable = cluster.device.memory_gib - cluster.device.reserve_gib;
    const double params = models::total_params(model);
    return fmt::format(
        "{}: the tightest constraint is memory: the smallest-memory candidate (tp={} pp={} "
        "dp={} cp={}{} mbs={} zero={} recompute={}) needs {:.1f} GiB per GPU but {} has {:.0f} GiB "
        "({:.0f} GiB usable after the {:.0f} GiB reserve){}; {} candidates over memory, {} "
        "rejected by constraints; try more GPUs (--gpus) or a device with more memory",
        what, s.tp, s.pp, s.dp, s.cp, model.moe ? fmt::format(" ep={} etp={}", s.ep, s.etp) : "",
        s.micro_batch, s.zero, planner::to_string(s.recompute),
        c.prediction.peak_memory_gib, cluster.device.name, cluster.device.memory_gib, usable,
        cluster.device.reserve_gib,
        // Weights, gradients and Adam state alone, spread evenly over every GPU.
        fmt::format("; its {:.0f}B parameters x 18 bytes (bf16 weights, fp32 gradients, Adam "
                    "state) are {:.1f} TiB, {:.0f} GiB per GPU even if split evenly over all {}",
                    params / 1e9, params * 18.0 / (1024.0 * 1024 * 1024 * 1024),
                    params * 18.0 / gpus / (1024.0 * 1024 * 1024), gpus),
        r.infeasible_memory, r.invalid);
  }
  return fmt::format(
      "{}: all {} candidates were rejected by constraints (heads and kv_heads divisible by "
      "tp, layers >= pp*vpp, global batch divisible by micro-batch*dp); relax the "
      "restrictions or change --gpus / --global-batch",
      what, r.invalid);
}

}  // namespace strata::report
