// Shared pieces of the framework exports (export/export_common.h).
#include "export/export_common.h"

#include <cmath>
#include <sstream>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.h"
#include "export/megatron_arg_table.h"
#include "export/safe_text.h"

namespace strata::exports {

std::string rope_base_arg(const models::ModelSpec& m) {
  const double b = m.rope_base;
  if (!(b >= 1 && b <= 1e15) || b != std::floor(b))
    input_error("model '{}': rope_base {} is not an integer, which Megatron's --rotary-base cannot take",
                one_line(m.name), b);
  return fmt::format("{}", static_cast<long long>(b));
}

SoftwareStack planned_stack(const Plan& p, const SoftwareStack& stack) {
  SoftwareStack s = stack;
  if (!p.strategy.precision.empty())
    s.precision = costmodel::dtype_from_string(p.strategy.precision);
  return s;
}

DType non_fp8_precision(const SoftwareStack& stack) {
  return stack.precision == DType::Fp8 ? DType::Bf16 : stack.precision;
}

StageShape stage_shape(const Plan& p) {
  StageShape s;
  s.blocks = planner::blocks_per_stage(p.stage_layers, p.model);
  for (auto b : s.blocks) s.even = s.even && b == s.blocks.front();
  return s;
}

std::string header(const Plan& p, const char* what) {
  const auto& s = p.strategy;
  return fmt::format("{} from strata plan: model {} on cluster {}, {} GPUs = dp {} x tp {} x pp {}{}",
                     what, one_line(p.model.name), one_line(p.cluster), s.gpus(), s.dp, s.tp,
                     s.pp, s.cp > 1 ? fmt::format(" x cp {}", s.cp) : std::string());
}

std::string comment_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += "# " + one_line(l) + "\n";
  return out;
}

std::string arg_lines(const std::string& command, const std::vector<Arg>& args) {
  std::string out = command;
  for (const auto& [flag, value] : args)
    out += " \\\n  " + flag + (value.empty() ? "" : " " + arg_value_words(flag, value));
  return out + "\n";
}

std::string arg_value_words(const std::string& flag, const std::string& value) {
  if (megatron_arg_arity(flag) != MegatronArity::Many) return shell_quote(value);
  std::string out;
  std::istringstream items(value);
  for (std::string item; items >> item;) out += (out.empty() ? "" : " ") + shell_quote(item);
  return out.empty() ? shell_quote(value) : out;
}

std::string num(std::int64_t v) { return std::to_string(v); }
std::string num(double v) { return fmt::format("{}", v); }

std::int64_t train_iterations(const Plan& p, std::int64_t tokens) {
  const std::int64_t per_step = p.strategy.global_batch * p.model.seq_len;
  STRATA_CHECK(per_step > 0 && tokens > 0, "train_iterations of an empty step or no tokens");
  return tokens / per_step + (tokens % per_step != 0 ? 1 : 0);
}

void refuse_recompute_modules(const planner::Strategy& s, const char* framework) {
  const bool megatron = std::string_view(framework) == "Megatron-LM";
  if (s.recompute_modules.megatron() && !megatron)
    input_error("the plan recomputes Megatron-Core modules (strategy.recompute_modules [{}]), which {} "
                "has no setting for; export it --to megatron",
                fmt::format("{}", fmt::join(costmodel::recompute_module_names(s.recompute_modules), ", ")),
                framework);
  if (s.recompute_layers > 0 && !megatron)
    input_error("the plan re-runs only the first {} blocks of each model chunk (strategy.recompute_layers, "
                "Megatron-LM's block recompute), which {} has no setting for; export it --to megatron",
                s.recompute_layers, framework);
  if (s.recompute_modules.per_op && std::string_view(framework) != "TorchTitan")
    input_error("the plan recomputes with TorchTitan's per-op policy (strategy.recompute_modules [per_op], "
                "a torchtitan stack's selective recompute), which {} has no setting for; export it --to "
                "torchtitan, or plan it on the framework's own stack (--stack)",
                framework);
}

}  // namespace strata::exports
