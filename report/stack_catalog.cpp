#include "report/stack_catalog.h"

#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace strata::report {

namespace {

using costmodel::SoftwareStack;

std::vector<std::pair<std::string, std::string>> settings(const SoftwareStack& s) {
  auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  return {
      {"precision", costmodel::to_string(s.precision)},
      {"grad_reduce_dtype", costmodel::to_string(s.grad_reduce_dtype)},
      {"grad_comm_dtype", costmodel::to_string(s.grad_comm_dtype)},
      {"zero1_grad_collective", s.zero1_grad_all_reduce ? "all_reduce" : "reduce_scatter"},
      {"attention.kernel", costmodel::to_string(s.attention)},
      {"attention.softmax_fused", b(s.softmax_fused)},
      {"attention.dropout", fmt::format("{:g}", s.attention_dropout)},
      {"attention.layout_copies", b(s.attention_layout_copies)},
      {"fusions.bias_gelu", b(s.fused_bias_gelu)},
      {"fusions.bias_dropout_add", b(s.fused_bias_dropout_add)},
      {"fusions.layernorm", b(s.fused_layernorm)},
      {"fusions.rope", b(s.fused_rope)},
      {"fusions.cross_entropy", b(s.fused_cross_entropy)},
      {"fusions.grad_accumulation", b(s.fused_grad_accumulation)},
      {"overlap.tp_comm", b(s.overlap_tp_comm)},
      {"overlap.tp_backward", b(s.overlap_tp_backward)},
      {"overlap.tp_comm_sms", fmt::format("{}", s.tp_comm_sms)},
      {"overlap.grad_reduce", b(s.overlap_grad_reduce)},
      {"overlap.param_gather", b(s.overlap_param_gather)},
      {"overlap.p2p", costmodel::to_string(s.p2p)},
      {"cp_comm_type", costmodel::to_string(s.cp_comm)},
      {"zero_prefetch", b(s.zero_prefetch)},
      {"zero3_gather", costmodel::to_string(s.zero3_gather)},
      {"zero3_persist_params", fmt::format("{:g}", s.zero3_persist_params)},
      {"zero3_gather_bucket_params", fmt::format("{:g}", s.zero3_gather_bucket_params)},
      {"zero3_fetch_host_us", fmt::format("{:g}", s.zero3_fetch_host_us)},
      {"fp8_params", b(s.fp8_params)},
      {"moe_dispatcher", costmodel::to_string(s.moe_dispatcher)},
      {"moe_host_sync", b(s.moe_host_sync)},
      {"moe_shared_expert_overlap", b(s.moe_shared_expert_overlap)},
      {"moe_probs_in_activation", b(s.moe_probs_in_activation)},
      {"fp8_tp_all_gather", b(s.fp8_tp_all_gather)},
      {"sp_collective_copies", b(s.sp_collective_copies)},
      {"sp_backward_regather", b(s.sp_backward_regather)},
      {"loss_bytes_per_logit", fmt::format("{:g}", s.loss_bytes_per_logit)},
      {"sharded_params_fp32", b(s.sharded_params_fp32)},
      {"grad_buffer.zero", b(s.grad_buffer_zero)},
      {"grad_buffer.nan_check", b(s.grad_buffer_nan_check)},
      {"grad_buffer.scale", b(s.grad_buffer_scale)},
      {"grad_bucket_params", s.grad_bucket_params < 0 ? std::string("max(40M, 1M x dp)")
                                                      : fmt::format("{}", s.grad_bucket_params)},
      {"optimizer", s.optimizer},
      {"distributed_optimizer", b(s.distributed_optimizer)},
      {"kernel_overhead_us", s.kernel_overhead_us < 0 ? std::string("device profile's")
                                                      : fmt::format("{:g}", s.kernel_overhead_us)},
  };
}

nlohmann::json stack_json(const SoftwareStack& s) {
  nlohmann::json j{{"name", s.name}, {"description", s.description}, {"framework", s.framework},
                   {"version", s.version}};
  nlohmann::json set = nlohmann::json::object(), src = nlohmann::json::object();
  for (const auto& [k, v] : settings(s)) set[k] = v;
  for (const auto& [k, v] : s.sources) src[k] = v;
  j["settings"] = set;
  j["sources"] = src;
  return j;
}

}  // namespace

std::string format_stack_text(const SoftwareStack& s) {
  std::string o = fmt::format("# stack {}: {}\n# framework {} {}\n", s.name, s.description,
                              s.framework, s.version);
  for (const auto& [k, v] : settings(s)) {
    auto it = s.sources.find(k);
    // A section's one source ("grad_buffer") covers its dotted settings ("grad_buffer.zero").
    if (it == s.sources.end() && k.find('.') != std::string::npos) it = s.sources.find(k.substr(0, k.find('.')));
    o += fmt::format("{:<26} {:<20} {}\n", k, v,
                     it == s.sources.end() ? std::string("(no source given)") : it->second);
  }
  return o;
}

std::string format_stacks_table(const std::vector<SoftwareStack>& stacks, const std::string& default_stack) {
  std::string o = fmt::format("{:<24} {:<5} {:<8} {:<14} {:<10} {:<18} {}\n", "stack", "prec",
                              "attn", "tp overlap", "dp overlap", "p2p", "description");
  for (const auto& s : stacks)
    o += fmt::format("{:<24} {:<5} {:<8} {:<14} {:<10} {:<18} {}{}\n", s.name,
                     costmodel::to_string(s.precision), costmodel::to_string(s.attention),
                     s.overlap_tp_comm ? "userbuffers" : s.overlap_tp_backward ? "backward" : "none",
                     s.overlap_grad_reduce ? "yes" : "no", costmodel::to_string(s.p2p),
                     s.description, s.name == default_stack ? " (default on GPUs)" : "");
  o += "# `strata stacks show NAME` prints every setting with its source; --stack NAME|FILE on "
       "plan, simulate, compare, validate\n";
  return o;
}

std::string format_stack_json(const SoftwareStack& s) { return stack_json(s).dump(2) + "\n"; }

std::string format_stacks_json(const std::vector<SoftwareStack>& stacks) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& s : stacks) j.push_back(stack_json(s));
  return j.dump(2) + "\n";
}

}  // namespace strata::report
