#include "report/no_plan_reason.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/model_stats.h"

namespace strata::report {

namespace {

// What `stack` cannot run that would take memory off a rank, as "; stack X runs no ... (...)",
// or "" when it runs all of it.
std::string stack_limits(const models::ModelSpec& model, const costmodel::SoftwareStack* stack) {
  if (!stack) return "";
  const costmodel::StackSupport& u = stack->supports;
  std::vector<std::string> no;
  if (model.moe && !u.experts) no.emplace_back("expert parallelism");
  if (!u.tensor_parallel) no.emplace_back("tensor parallelism");
  if (!u.pipeline_parallel) no.emplace_back("pipeline parallelism");
  if (!u.sequence_parallel) no.emplace_back("sequence parallelism");
  std::string zero;
  if (u.max_zero == 0) zero = "ZeRO";
  else if (u.max_zero < 3) zero = fmt::format("ZeRO above stage {}", u.max_zero);
  else if (u.max_zero_with_pp < 3) zero = fmt::format("ZeRO above stage {} beside pipeline parallelism", u.max_zero_with_pp);
  if (!zero.empty()) no.push_back(zero);
  if (no.empty()) return "";
  std::string list;
  for (std::size_t i = 0; i < no.size(); ++i)
    list += (i == 0 ? "" : i + 1 == no.size() ? " or " : ", ") + no[i];
  return fmt::format("; stack {} runs no {} (`strata stacks` lists the stacks that do: --stack NAME)", stack->name,
                     list);
}

}  // namespace

std::string no_plan_reason(const models::ModelSpec& model, const std::string& cluster_name,
                           const costmodel::ClusterSpec& cluster, int gpus, const planner::SearchResult& r,
                           const costmodel::SoftwareStack* stack) {
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
        "rejected by constraints{}; try more GPUs (--gpus) or a device with more memory",
        what, s.tp, s.pp, s.dp, s.cp, model.moe ? fmt::format(" ep={} etp={}", s.ep, s.etp) : "",
        s.micro_batch, s.zero, planner::to_string(s.recompute),
        c.prediction.peak_memory_gib, cluster.device.name, cluster.device.memory_gib, usable,
        cluster.device.reserve_gib,
        // Weights, gradients and Adam state alone, spread evenly over every GPU.
        fmt::format("; its {:.0f}B parameters x 18 bytes (bf16 weights, fp32 gradients, Adam "
                    "state) are {:.1f} TiB, {:.0f} GiB per GPU even if split evenly over all {}",
                    params / 1e9, params * 18.0 / (1024.0 * 1024 * 1024 * 1024),
                    params * 18.0 / gpus / (1024.0 * 1024 * 1024), gpus),
        r.infeasible_memory, r.invalid, stack_limits(model, stack));
  }
  return fmt::format(
      "{}: all {} candidates were rejected by constraints (heads and kv_heads divisible by "
      "tp, layers >= pp*vpp, global batch divisible by micro-batch*dp); relax the "
      "restrictions or change --gpus / --global-batch",
      what, r.invalid);
}

}  // namespace strata::report
