// Whether a software stack can run a strategy at all (costmodel::StackSupport): the search
// leaves out what the stack cannot run, and simulate refuses it by name.
#pragma once
#include <string>

#include "costmodel/software_stack.h"
#include "planner/strategy.h"

namespace strata::planner {

// Empty when the stack runs the strategy; else why not, naming the setting and the stack.
std::string stack_refusal(const Strategy& s, const costmodel::SoftwareStack& stack);

// `s` with what selective recompute means on `stack` filled in: a strategy with recompute
// selective and no modules takes the stack's selective_recompute (TorchTitan: per_op);
// anything else is returned as it is.
Strategy with_stack_recompute(Strategy s, const costmodel::SoftwareStack& stack);

}  // namespace strata::planner
