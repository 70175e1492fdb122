// Whether a software stack can run a strategy at all (costmodel::StackSupport): the search
// leaves out what the stack cannot run, and simulate refuses it by name.
#pragma once
#include <string>

#include "costmodel/software_stack.h"
#include "planner/strategy.h"

namespace strata::planner {

// Empty when the stack runs the strategy; else why not, naming the setting and the stack.
std::string stack_refusal(const Strategy& s, const costmodel::SoftwareStack& stack);

}  // namespace strata::planner
