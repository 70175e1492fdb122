// Plans and stacks shared by the export/import tests: small GPT and GQA Llama models, a plan
// builder with the even stage map, an explicit stage map, and a stack with every overlap on.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "planner/plan.h"
#include "planner/strategy.h"
#include "tests/test_models.h"

namespace strata::exports::testing {

inline models::ModelSpec gpt(int layers) {
  return strata::testing::test_model("gpt-test", layers, 1024, 16, 16, 4096, 50257, 2048);
}

// Llama-style: GQA (4 query groups), SwiGLU, RMSNorm, RoPE, untied, no biases.
inline models::ModelSpec llama(int layers) {
  return strata::testing::llama_style(
      strata::testing::test_model("llama-test", layers, 1024, 16, 4, 2816, 32000, 4096));
}

inline planner::Plan make_plan(models::ModelSpec m, int dp, int tp, int pp, int vpp,
                               std::int64_t mb, std::int64_t gb) {
  planner::Plan p;
  p.model = std::move(m);
  p.cluster = "dgx-a100";
  p.strategy = {.dp = dp, .tp = tp, .pp = pp, .vpp = vpp, .micro_batch = mb, .global_batch = gb,
                .schedule = vpp > 1 ? planner::ScheduleKind::Interleaved : planner::ScheduleKind::OneFOneB,
                .precision = {}};
  p.stage_layers = planner::even_stage_layers(p.model, pp, vpp);
  planner::require_valid(p.strategy, p.model);
  planner::check_stage_layers(p.stage_layers, p.model, pp, vpp);
  return p;
}

// The plan with context parallel size cp and ZeRO stage zero, validated again.
inline planner::Plan with_cp_zero(planner::Plan p, int cp, int zero) {
  p.strategy.cp = cp;
  p.strategy.zero = zero;
  planner::require_valid(p.strategy, p.model);
  return p;
}

// An MoE plan: 1F1B, the even stage map, sequence parallel with tp > 1 (Megatron requires
// it for MoE), experts folded as etp x ep over the tp x dp ranks of a stage.
inline planner::Plan moe_plan(models::ModelSpec m, int dp, int tp, int pp, std::int64_t mb,
                              std::int64_t gb, int ep, int etp) {
  planner::Plan p;
  p.model = std::move(m);
  p.cluster = "dgx-h100";
  p.strategy = {.dp = dp, .tp = tp, .pp = pp, .micro_batch = mb, .global_batch = gb, .sequence_parallel = tp > 1,
                .ep = ep, .etp = etp, .precision = {}};
  p.stage_layers = planner::even_stage_layers(p.model, pp, 1);
  planner::require_valid(p.strategy, p.model);
  planner::check_stage_layers(p.stage_layers, p.model, pp, 1);
  return p;
}

// Mixtral-8x7B (catalog): tp 2 x pp 4 x dp 4 = 32 GPUs, ep 8 over the tp x dp ranks of a
// stage, SP (required with tp > 1 for MoE), ZeRO-1.
inline planner::Plan mixtral_plan() {
  planner::Plan p = moe_plan(models::load_model("mixtral-8x7b"), 4, 2, 4, 1, 64, 8, 1);
  p.strategy.zero = 1;
  return p;
}

// DeepSeek-V3 (catalog: MLA, 1 shared expert, 3 dense blocks first, sigmoid router): tp 2 x
// pp 8 x dp 32 = 512 GPUs, ep 64, 61 blocks over 8 stages (uneven), full recompute.
inline planner::Plan deepseek_plan() {
  // The main model alone: the catalog's DeepSeek-V3 trains one multi-token-prediction depth
  // as published, which TorchTitan and Megatron-DeepSpeed refuse (moe_export_test adds it).
  models::ModelSpec m = models::load_model("deepseek-v3");
  m.mtp_layers = 0;
  planner::Plan p = moe_plan(m, 32, 2, 8, 1, 1024, 64, 1);
  p.strategy.zero = 1;
  p.strategy.recompute = planner::Recompute::Full;
  return p;
}

// Qwen1.5-MoE-A2.7B (catalog: 60 experts, top 4, one shared expert, softmax): tp 2 x dp 4,
// experts split ep 2 x etp 2.
inline planner::Plan qwen_moe_plan() {
  return moe_plan(models::load_model("qwen1.5-moe-a2.7b"), 4, 2, 1, 2, 64, 2, 2);
}

// A small GPT-style MoE (linear biases): 4 experts, top-1 softmax routing capped at capacity
// factor 1.25, ep 4 over dp 4, pp 2.
inline planner::Plan capacity_moe_plan() {
  models::ModelSpec m = gpt(8);
  m.name = "gpt-moe-test";
  models::MoeSpec e;
  e.experts = 4;
  e.top_k = 1;
  e.expert_ffn = 2048;
  e.capacity_factor = 1.25;
  m.moe = e;
  return moe_plan(m, 4, 1, 2, 2, 32, 4, 1);
}

// The plan with an FP8 recipe (strategy.precision fp8).
inline planner::Plan with_fp8(planner::Plan p) {
  p.strategy.precision = "fp8";
  planner::require_valid(p.strategy, p.model);
  return p;
}

// Stage map with the given blocks per virtual stage (embedding first, head last).
inline std::vector<std::vector<int>> stage_map(const std::vector<int>& blocks) {
  std::vector<std::vector<int>> out;
  int next = 1;
  for (std::size_t v = 0; v < blocks.size(); ++v) {
    std::vector<int> s;
    if (v == 0) s.push_back(0);
    for (int i = 0; i < blocks[v]; ++i) s.push_back(next++);
    if (v + 1 == blocks.size()) s.push_back(next);
    out.push_back(s);
  }
  return out;
}

// A stack with fp32 gradient reduction, attention dropout 0.1, and the DP gradient
// reduction, parameter all-gather and TP communication overlapped (or none of them).
inline costmodel::SoftwareStack test_stack(std::string name, costmodel::DType precision,
                                           costmodel::AttentionKernel attention, bool overlap) {
  costmodel::SoftwareStack s;
  s.name = std::move(name);
  s.precision = precision;
  s.grad_reduce_dtype = costmodel::DType::Fp32;
  s.attention = attention;
  s.attention_dropout = 0.1;
  s.overlap_grad_reduce = s.overlap_param_gather = s.overlap_tp_comm = overlap;
  return s;
}

// bf16, cuDNN attention, every overlap on (as Megatron-Core's README runs).
inline costmodel::SoftwareStack overlap_stack() {
  return test_stack("test-overlap", costmodel::DType::Bf16, costmodel::AttentionKernel::Cudnn, true);
}

// The overlap stack with context parallel K/V all-gathered and no ZeRO-3 prefetch.
inline costmodel::SoftwareStack all_gather_stack() {
  costmodel::SoftwareStack s = overlap_stack();
  s.name = "test-all-gather";
  s.cp_comm = costmodel::CpCommType::AllGather;
  s.zero_prefetch = false;
  return s;
}

// fp16, unfused attention, no overlap (as Megatron-LM in 2021).
inline costmodel::SoftwareStack plain_stack() {
  return test_stack("test-plain", costmodel::DType::Fp16, costmodel::AttentionKernel::Unfused, false);
}

}  // namespace strata::exports::testing
