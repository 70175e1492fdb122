// Expert-parallel rules of a Strategy (mixture of experts, Megatron-Core's parallel
// folding): which ep / etp a model and a layout allow. Private to strata_plan: validate()
// applies them.
//
// Megatron-Core (NVIDIA/Megatron-LM megatron/core/parallel_state.py at
// 934c8260ada361db9b155d504c5b20600731d773, initialize_model_parallel): attention and
// dense layers use a RankGenerator over tp x cp x dp x pp, experts a second one over
// etp x ep x edp x pp on the same ranks with edp = world / (etp * ep * pp), order
// "tp-cp-ep-dp-pp" (etp innermost), and both must give the same pipeline groups. So
// etp * ep must divide the tp * dp ranks of a stage, and the pipeline is outermost.
#pragma once
#include <vector>

#include "models/model_spec.h"
#include "planner/strategy.h"

namespace strata::planner {

// Appends every violated expert-parallel rule: ep, etp >= 1; a dense model needs
// ep = etp = 1; an MoE model needs ep | experts, etp | expert_ffn, etp * ep | tp * dp,
// sequence parallelism when tp > 1 (Megatron-LM requires it for MoE with tensor
// parallelism: megatron/training/arguments.py), and the tp-dp-pp rank order (pipeline
// outermost) when ep * etp > 1.
void add_expert_violations(const Strategy& s, const models::ModelSpec& m, std::vector<Violation>& out);

}  // namespace strata::planner
