#include "planner/detail/expert_parallel.h"

#include <fmt/format.h>

namespace strata::planner {

void add_expert_violations(const Strategy& s, const models::ModelSpec& m, std::vector<Violation>& out) {
  auto add = [&](const char* field, std::string msg) { out.push_back(Violation{field, std::move(msg)}); };
  if (s.ep < 1) add("strategy.ep", fmt::format("strategy.ep ({}) must be >= 1", s.ep));
  if (s.etp < 1) add("strategy.etp", fmt::format("strategy.etp ({}) must be >= 1", s.etp));
  if (s.ep < 1 || s.etp < 1) return;
  if (!m.moe) {
    if (s.ep > 1)
      add("strategy.ep", fmt::format("strategy.ep ({}) needs a mixture-of-experts model (model '{}' has "
                                     "no moe: section)", s.ep, m.name));
    if (s.etp > 1)
      add("strategy.etp", fmt::format("strategy.etp ({}) needs a mixture-of-experts model (model '{}' has "
                                      "no moe: section)", s.etp, m.name));
    return;
  }
  const models::MoeSpec& e = *m.moe;
  // Context parallel folds with the experts (costmodel/expert_dispatch_cost.h), ZeRO-2/3
  // shard routed experts over edp (planner/step_costs.cpp add_zero_comm), and an FP8 recipe
  // runs the expert GEMMs in FP8 (costmodel/fp8_linear.h): none of them is refused here.
  if (e.experts % s.ep != 0)
    add("strategy.ep", fmt::format("strategy.ep ({}) must divide model.moe.experts ({})", s.ep, e.experts));
  if (e.expert_ffn % s.etp != 0)
    add("strategy.etp",
        fmt::format("strategy.etp ({}) must divide model.moe.expert_ffn ({})", s.etp, e.expert_ffn));
  const long long stage_ranks = static_cast<long long>(s.tp) * s.cp * s.dp;
  const long long expert_ranks = static_cast<long long>(s.ep) * s.etp;
  if (s.tp >= 1 && s.cp >= 1 && s.dp >= 1 && stage_ranks % expert_ranks != 0)
    add("strategy.ep",
        fmt::format("strategy.ep ({}) x strategy.etp ({}) must divide strategy.tp ({}) x strategy.cp ({}) x "
                    "strategy.dp ({}): Megatron-Core folds the experts over the ranks of a pipeline stage",
                    s.ep, s.etp, s.tp, s.cp, s.dp));
  if (e.shared_experts > 0 && s.tp > 1 && (e.shared_experts * e.shared_expert_ffn) % s.tp != 0)
    add("strategy.tp", fmt::format("strategy.tp ({}) must divide the shared experts' width ({} x {})", s.tp,
                                   e.shared_experts, e.shared_expert_ffn));
  if (s.tp > 1 && !s.sequence_parallel)
    add("strategy.sequence_parallel",
        fmt::format("strategy.sequence_parallel must be true with strategy.tp ({}) > 1 for a "
                    "mixture-of-experts model (Megatron-LM requires it)", s.tp));
  // "tp-dp-pp" places cp right after tp (costmodel/rank_grid.h), the same grid as tp-cp-dp-pp.
  if (expert_ranks > 1 && s.rank_order != "tp-dp-pp" && s.rank_order != "tp-cp-dp-pp")
    add("strategy.rank_order",
        fmt::format("strategy.rank_order ('{}') must be tp-dp-pp or tp-cp-dp-pp with expert parallelism "
                    "(Megatron-Core's tp-cp-ep-dp-pp: the pipeline outermost)", s.rank_order));
}

}  // namespace strata::planner
