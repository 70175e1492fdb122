// Expert-parallel rules of a Strategy (mixture of experts, Megatron-Core's parallel
// folding): which ep / etp a model and a layout allow. Private to strata_plan: validate()
// applies them.
//
// Megatron-Core (NVIDIA/Megatron-LM megatron/core/parallel_state.py at
// d98e8a64ddf34856e74b24714e3bedb2f5a39553, initialize_model_parallel): attention and
// dense layers use a RankGenerator over tp x cp x dp x pp, experts a second one over
// etp x ep x edp x pp (cp = 1) on the same ranks with edp = world / (etp * ep * pp), order
// "tp-cp-ep-dp-pp" (etp innermost), and both must give the same pipeline groups. So
// etp * ep must divide the tp * cp * dp ranks of a stage, and the pipeline is outermost.
#pragma once
#include <vector>

#include "models/model_spec.h"
#include "planner/strategy.h"

namespace strata::planner {

// Appends every violated expert-parallel rule: ep, etp >= 1; a dense model needs
// ep = etp = 1; an MoE model needs ep | experts, etp | expert_ffn, etp * ep | tp * cp * dp,
// sequence parallelism when tp > 1 (Megatron-LM requires it for MoE with tensor
// parallelism: megatron/training/arguments.py), the tp-dp-pp (= tp-cp-dp-pp) rank order
// (pipeline outermost) when ep * etp > 1.
void add_expert_violations(const Strategy& s, const models::ModelSpec& m, std::vector<Violation>& out);

}  // namespace strata::planner
