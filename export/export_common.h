// What the framework exports share (export/export_megatron.cpp, export_deepspeed.cpp,
// export_torchtitan.cpp): the FlagWriter their argument lists are built with and its shell
// rendering, the comment header, and the plan facts more than one format needs (the stack
// as planned, stage sizes, the RoPE base). Internal to export/: the public interface is
// export/export_formats.h.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/shell_quote.h"
#include "costmodel/software_stack.h"
#include "export/export_formats.h"
#include "models/model_spec.h"
#include "planner/plan.h"

namespace strata::exports {

// The names every export file uses (this header is internal to export/).
using costmodel::DType;
using costmodel::SoftwareStack;
using planner::Plan;
using planner::Recompute;
using planner::ScheduleKind;

// Command-line arguments in the order written: `flag("--name")` for a flag without a value,
// `flag("--name", value)` with one. Every framework's argument list (megatron_args,
// megatron_deepspeed_args) is built with it and rendered by arg_lines.
class FlagWriter {
 public:
  void operator()(const std::string& flag, std::string value = "") {
    args_.emplace_back(flag, std::move(value));
  }
  const std::vector<Arg>& args() const { return args_; }

 private:
  std::vector<Arg> args_;
};

// `command`, then one "--flag value \" line per argument; values as arg_value_words writes them.
std::string arg_lines(const std::string& command, const std::vector<Arg>& args);
// A flag's value as shell words: one shell_quote'd word, or for a Megatron-LM list argument
// (nargs, export/megatron_arg_table.h; FlagWriter values joined by single spaces) one word per
// item, as argparse reads them.
std::string arg_value_words(const std::string& flag, const std::string& value);
// shell_quote (common/shell_quote.h): the values' shell words.
using strata::shell_quote;
// One "# " line per entry (control characters folded).
std::string comment_lines(const std::vector<std::string>& lines);
// Numbers as the frameworks' parsers read them.
std::string num(std::int64_t v);
std::string num(double v);

// The first comment line of every export: what it is, the plan's model, cluster and layout.
std::string header(const planner::Plan& p, const char* what);

// The RoPE base as the integer both Megatron flags take (--rotary-base,
// --rotary-position-embeddings-theta); a fractional base cannot be written, so it is refused.
std::string rope_base_arg(const models::ModelSpec& m);
// The stack with the plan's strategy.precision (bf16 | fp16 | fp8) in place of its own, as
// the simulator resolves it (planner/simulator.cpp resolve_stack): the exports write what
// the prediction assumed.
// Refuses (InputError) a plan whose recompute the export does not write (`framework` names the
// one refusing): Megatron-Core modules and the block method's recompute_layers for every
// framework but Megatron-LM, and TorchTitan's per-op policy for every framework but TorchTitan.
void refuse_recompute_modules(const planner::Strategy& s, const char* framework);

costmodel::SoftwareStack planned_stack(const planner::Plan& p, const costmodel::SoftwareStack& stack);
// Under an FP8 recipe everything but the FP8-run linear layers stays bf16 (the simulator's
// stack_dtype); otherwise the stack's precision.
costmodel::DType non_fp8_precision(const costmodel::SoftwareStack& stack);

struct StageShape {
  std::vector<std::int64_t> blocks;  // transformer blocks per virtual stage
  bool even = true;                  // all virtual stages hold the same number of blocks
};
StageShape stage_shape(const planner::Plan& p);

}  // namespace strata::exports
