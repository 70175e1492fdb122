// What `strata stacks` shows: the software-stack catalog as a table or JSON, and one stack
// (`strata stacks show NAME`) with every setting and its source.
#pragma once
#include <string>
#include <vector>

#include "costmodel/software_stack.h"

namespace strata::report {

// One row per stack; `default_stack` (the GPUs' default) is marked.
std::string format_stacks_table(const std::vector<costmodel::SoftwareStack>& stacks,
                                const std::string& default_stack);
// A JSON array of format_stack_json's objects.
std::string format_stacks_json(const std::vector<costmodel::SoftwareStack>& stacks);
// name, description, framework, version, settings (flat "section.key": value) and sources.
std::string format_stack_json(const costmodel::SoftwareStack& stack);
// Every setting on its own line with the source that justifies it.
std::string format_stack_text(const costmodel::SoftwareStack& stack);

}  // namespace strata::report
