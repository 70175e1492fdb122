#include "planner/stack_support.h"

#include <fmt/format.h>

namespace strata::planner {

std::string stack_refusal(const Strategy& s, const costmodel::SoftwareStack& stack) {
  const costmodel::StackSupport& u = stack.supports;
  auto no = [&](const std::string& what) {
    return fmt::format("stack {} ({}) cannot run {}: pick a stack that can (`strata stacks`), or leave it out",
                       stack.name, stack.version.empty() ? stack.description : stack.version, what);
  };
  if (s.tp > 1 && !u.tensor_parallel) return no("tensor parallelism (strategy.tp)");
  if (s.pp > 1 && !u.pipeline_parallel) return no("pipeline parallelism (strategy.pp)");
  if (s.sequence_parallel && !u.sequence_parallel) return no("sequence parallelism (strategy.sequence_parallel)");
  if (s.recompute == Recompute::Selective && !u.selective_recompute)
    return no("selective recompute (strategy.recompute selective)");
  if (s.zero > u.max_zero) return no(fmt::format("ZeRO stage {} (strategy.zero; at most {})", s.zero, u.max_zero));
  if (s.pp > 1 && s.zero > u.max_zero_with_pp)
    return no(fmt::format("ZeRO stage {} with pipeline parallelism (strategy.zero with pp {}; at most stage {})",
                          s.zero, s.pp, u.max_zero_with_pp));
  if (s.cp > 1 && !u.context_parallel) return no("context parallelism (strategy.cp)");
  if ((s.ep > 1 || s.etp > 1) && !u.experts) return no("expert parallelism (strategy.ep / etp)");
  if (s.ep_overlap && !u.ep_overlap)
    return no("Megatron-Core's batch-level EP overlap (strategy.ep_overlap, --overlap-moe-expert-parallel-comm)");
  // TransformerConfig.__post_init__ at d98e8a64: the overlap runs with the alltoall or flex dispatcher only.
  if (s.ep_overlap && stack.moe_dispatcher == costmodel::MoeDispatcher::AllGather)
    return no("Megatron-Core's batch-level EP overlap with its allgather dispatcher (strategy.ep_overlap needs "
              "moe_dispatcher alltoall or deepep)");
  // An fp32 stack (strata's CPU runtime: OpenBLAS sgemm, fp32 tensors) has no 16-bit or fp8
  // kernels: a plan in those would be predicted at a peak its training never runs at.
  if (stack.precision == costmodel::DType::Fp32 && !s.precision.empty() && s.precision != "fp32")
    return no(fmt::format("precision {} (it trains in fp32 only; drop --precision)", s.precision));
  return "";
}

Strategy with_stack_recompute(Strategy s, const costmodel::SoftwareStack& stack) {
  if (s.recompute == Recompute::Selective && !s.recompute_modules.any()) s.recompute_modules = stack.selective_recompute;
  return s;
}

}  // namespace strata::planner
