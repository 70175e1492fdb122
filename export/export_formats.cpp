// Plan -> Megatron-LM / DeepSpeed (+ Megatron-DeepSpeed) / TorchTitan. Every name used is in
// the framework's table under export/frameworks/ (repository, commit and files in each
// table's header); tests/export/framework_names_test.cpp checks each output against it.
#include "export/export_formats.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "export/safe_text.h"

namespace strata::exports {

using costmodel::DType;
using costmodel::SoftwareStack;
using planner::Plan;
using planner::Recompute;
using planner::ScheduleKind;

namespace {

// The RoPE base as the integer both Megatron flags take (--rotary-base,
// --rotary-position-embeddings-theta); a fractional base cannot be written, so it is refused.
std::string rope_base_arg(const models::ModelSpec& m) {
  const double b = m.rope_base;
  if (!(b >= 1 && b <= 1e15) || b != std::floor(b))
    input_error("model '{}': rope_base {} is not an integer, which Megatron's --rotary-base cannot take",
                one_line(m.name), b);
  return fmt::format("{}", static_cast<long long>(b));
}

// The stack with the plan's strategy.precision (bf16 | fp16 | fp8) in place of its own, as
// the simulator resolves it (planner/simulator.cpp resolve_stack): the exports write what
// the prediction assumed.
SoftwareStack planned_stack(const Plan& p, const SoftwareStack& stack) {
  SoftwareStack s = stack;
  if (!p.strategy.precision.empty())
    s.precision = costmodel::dtype_from_string(p.strategy.precision);
  return s;
}

// Under an FP8 recipe everything but the FP8-run linear layers stays bf16 (the simulator's
// stack_dtype); otherwise the stack's precision.
DType non_fp8_precision(const SoftwareStack& stack) {
  return stack.precision == DType::Fp8 ? DType::Bf16 : stack.precision;
}

// Megatron-LM --moe-layer-freq for leading dense blocks: the Python list pattern its
// moe_freq_type evaluates (megatron/training/arguments.py _eval_pattern: digits, commas,
// brackets, parentheses, + and *), e.g. "([0]*3+[1]*58)" for DeepSeek-V3; its length must
// be --num-layers.
std::string megatron_moe_layer_freq(const models::ModelSpec& m) {
  const std::int64_t dense = m.moe->first_dense_layers;
  return fmt::format("([0]*{}+[1]*{})", dense, m.layers - dense);
}

struct StageShape {
  std::vector<std::int64_t> blocks;  // transformer blocks per virtual stage
  bool even = true;                  // all virtual stages hold the same number of blocks
};

StageShape stage_shape(const Plan& p) {
  StageShape s;
  s.blocks = planner::blocks_per_stage(p.stage_layers, p.model);
  for (auto b : s.blocks) s.even = s.even && b == s.blocks.front();
  return s;
}

// Uneven stages that Megatron-LM's --decoder-first/last-pipeline-num-layers express: no
// virtual stages, and the middle stages hold the same number of blocks.
bool first_last_only(const Plan& p, const StageShape& shape) {
  if (p.strategy.vpp != 1 || shape.even) return false;
  for (std::size_t st = 1; st + 1 < shape.blocks.size(); ++st)
    if (shape.blocks[st] != shape.blocks[1]) return false;
  return true;
}

std::string header(const Plan& p, const char* what) {
  const auto& s = p.strategy;
  return fmt::format("{} from strata plan: model {} on cluster {}, {} GPUs = dp {} x tp {} x pp {}{}",
                     what, one_line(p.model.name), one_line(p.cluster), s.gpus(), s.dp, s.tp,
                     s.pp, s.cp > 1 ? fmt::format(" x cp {}", s.cp) : std::string());
}

// Megatron-LM places ranks tp-cp-(ep)-dp-pp, or tp-cp-(ep)-pp-dp with --use-tp-pp-dp-mapping;
// strata's orders without cp put it right after tp (planner/strategy.h).
bool megatron_dp_pp_order(const std::string& o) { return o == "tp-dp-pp" || o == "tp-cp-dp-pp"; }
bool megatron_pp_dp_order(const std::string& o) { return o == "tp-pp-dp" || o == "tp-cp-pp-dp"; }

std::string comment_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += "# " + one_line(l) + "\n";
  return out;
}

// "--flag value \" lines; values holding shell metacharacters are single-quoted.
std::string shell_word(const std::string& v) {
  if (!v.empty() && v.find_first_of(" \t\n'\"\\$`|&;<>()*?[]#~!{}") == std::string::npos) return v;
  std::string out = "'";
  for (char c : v) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string arg_lines(const std::string& command, const std::vector<Arg>& args) {
  std::string out = command;
  for (const auto& [flag, value] : args)
    out += " \\\n  " + flag + (value.empty() ? "" : " " + shell_word(value));
  return out + "\n";
}

std::string num(std::int64_t v) { return std::to_string(v); }
std::string num(double v) { return fmt::format("{}", v); }

// torchrun's world: 8 GPUs per node when the count allows (change --nnodes/--nproc_per_node
// to the cluster's shape; their product must stay the plan's GPU count).
std::string torchrun(int gpus, const char* script) {
  const int per_node = gpus % 8 == 0 ? 8 : gpus;
  return fmt::format("torchrun --nnodes {} --nproc_per_node {} {}", gpus / per_node, per_node,
                     script);
}

}  // namespace

ExportTarget export_target_from_string(const std::string& s) {
  if (s == "megatron") return ExportTarget::Megatron;
  if (s == "deepspeed") return ExportTarget::DeepSpeed;
  if (s == "megatron-deepspeed") return ExportTarget::MegatronDeepSpeed;
  if (s == "torchtitan") return ExportTarget::TorchTitan;
  input_error("--to '{}' is not one of: megatron, deepspeed, megatron-deepspeed, torchtitan",
              one_line(s));
}

const char* to_string(ExportTarget t) {
  switch (t) {
    case ExportTarget::Megatron: return "megatron";
    case ExportTarget::DeepSpeed: return "deepspeed";
    case ExportTarget::MegatronDeepSpeed: return "megatron-deepspeed";
    case ExportTarget::TorchTitan: return "torchtitan";
  }
  return "?";
}

std::vector<std::string> export_target_names() {
  return {"megatron", "deepspeed", "megatron-deepspeed", "torchtitan"};
}

const char* megatron_sharding_strategy(int zero) {
  switch (zero) {
    case 0: return "no_shard";
    case 1: return "optim";
    case 2: return "optim_grads";
    case 3: return "optim_grads_params";
  }
  STRATA_CHECK(false, "ZeRO stage outside 0..3");
  return "";
}

int zero_from_megatron_sharding_strategy(const std::string& s) {
  for (int z = 0; z <= 3; ++z)
    if (s == megatron_sharding_strategy(z)) return z;
  return -1;
}

std::string megatron_layout(const Plan& p) {
  const std::int64_t head = p.model.layers + 1;
  std::string out;
  for (std::size_t v = 0; v < p.stage_layers.size(); ++v) {
    if (v > 0) out += "|";
    std::vector<std::string> parts;
    std::int64_t blocks = 0;
    for (int g : p.stage_layers[v]) blocks += (g >= 1 && g < head) ? 1 : 0;
    const auto& groups = p.stage_layers[v];
    if (std::find(groups.begin(), groups.end(), 0) != groups.end()) parts.push_back("E");
    if (blocks == 1) parts.push_back("t");
    else if (blocks > 1) parts.push_back(fmt::format("t*{}", blocks));
    if (std::find(groups.begin(), groups.end(), static_cast<int>(head)) != groups.end())
      parts.push_back("L");
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "," : "") + parts[i];
  }
  return out;
}

namespace {
// What Megatron-LM cannot run as planned, refused by name.
void check_megatron_can_run(const Plan& p) {
  // TransformerConfig.__post_init__ at d98e8a64: "Bias in Moe is only supported when ETP==1".
  if (p.model.moe && models::has_bias(p.model) && p.strategy.etp > 1)
    input_error("export megatron: model '{}' has linear biases (GELU), which Megatron-LM's "
                "experts support only with expert tensor parallel size 1; the plan has etp {}",
                one_line(p.model.name), p.strategy.etp);
}
}  // namespace

std::vector<Arg> megatron_args(const Plan& p, const SoftwareStack& plan_stack) {
  check_megatron_can_run(p);
  const SoftwareStack stack = planned_stack(p, plan_stack);
  const auto& s = p.strategy;
  const auto& m = p.model;
  const StageShape shape = stage_shape(p);
  std::vector<Arg> a;
  auto flag = [&](const std::string& f, std::string v = "") { a.emplace_back(f, std::move(v)); };

  // Model shape. Megatron-LM builds GPT-style models by default (LayerNorm, GELU, learned
  // absolute positions, biases, tied embeddings, dropout 0.1); every difference is a flag.
  flag("--num-layers", num(m.layers));
  flag("--hidden-size", num(m.hidden));
  flag("--ffn-hidden-size", num(m.ffn));
  flag("--num-attention-heads", num(m.heads));
  if (m.kv_heads != m.heads && !m.mla) {
    flag("--group-query-attention");
    flag("--num-query-groups", num(m.kv_heads));
  }
  // Per-head width where it is not hidden / heads (Megatron's kv_channels defaults to it).
  if (m.explicit_head_dim != 0 && !m.mla) flag("--kv-channels", num(m.explicit_head_dim));
  if (m.mla) {
    // Multi-latent attention (Megatron-LM MLATransformerConfig, megatron/core/transformer/
    // transformer_config.py at d98e8a64): --qk-head-dim is the per-head part without
    // positions (strata's qk_nope_head_dim), --qk-pos-emb-head-dim the rotary part; no
    // --q-lora-rank (None) projects queries without compression, as q_lora_rank 0 does.
    const models::MlaSpec& a = *m.mla;
    flag("--multi-latent-attention");
    if (a.q_lora_rank > 0) flag("--q-lora-rank", num(a.q_lora_rank));
    flag("--kv-lora-rank", num(a.kv_lora_rank));
    flag("--qk-head-dim", num(a.qk_nope_head_dim));
    flag("--qk-pos-emb-head-dim", num(a.qk_rope_head_dim));
    flag("--v-head-dim", num(a.v_head_dim));
    // The RMSNorms on the compressed latents: Megatron builds the q / kv up-projections as
    // norm + linear only with qk_layernorm (megatron/core/models/gpt/gpt_layer_specs.py,
    // the multi_latent_attention branch of the Transformer Engine layer spec).
    flag("--qk-layernorm");
    // MLA defaults to YaRN-scaled RoPE (rope_type "yarn", scaling factor 40); strata's
    // model is plain RoPE at --rotary-base.
    flag("--rope-type", "rope");
  }
  if (m.moe) {
    // Mixture of experts (TransformerConfig moe_* fields at d98e8a64). The shared experts
    // are one MLP of their total width (moe_shared_expert_intermediate_size = count x width).
    const models::MoeSpec& e = *m.moe;
    flag("--num-experts", num(e.experts));
    flag("--moe-router-topk", num(e.top_k));
    flag("--moe-ffn-hidden-size", num(e.expert_ffn));
    if (e.shared_experts > 0)
      flag("--moe-shared-expert-intermediate-size", num(e.shared_experts * e.shared_expert_ffn));
    if (e.first_dense_layers > 0) flag("--moe-layer-freq", megatron_moe_layer_freq(m));
    flag("--moe-router-score-function",
         e.router == models::RouterKind::Sigmoid ? "sigmoid" : "softmax");
    // Megatron refuses softmax after a top-1 selection (its gradient is zero):
    // TransformerConfig.__post_init__ asks for --moe-router-pre-softmax when topk is 1.
    if (e.top_k == 1 && e.router == models::RouterKind::Softmax) flag("--moe-router-pre-softmax");
    if (e.capacity_factor > 0) {
      // strata charges every expert padded to the capacity (costmodel/expert_dispatch_cost.h).
      flag("--moe-expert-capacity-factor", num(e.capacity_factor));
      flag("--moe-pad-expert-input-to-capacity");
    }
    // The exchange and kernels the cost model charges: all-to-all dispatch (Megatron's
    // default is allgather) and grouped GEMMs over the local experts.
    flag("--moe-token-dispatcher-type", "alltoall");
    flag("--moe-grouped-gemm");
  }
  flag("--seq-length", num(m.seq_len));
  flag("--max-position-embeddings", num(m.seq_len));
  // NullTokenizer takes the vocabulary size as given; a real run names its tokenizer instead.
  flag("--tokenizer-type", "NullTokenizer");
  flag("--vocab-size", num(m.vocab));
  flag("--position-embedding-type",
       m.positions == models::Positions::Rope ? "rope" : "learned_absolute");
  if (m.positions == models::Positions::Rope) flag("--rotary-base", rope_base_arg(m));
  if (m.activation == models::Activation::SwiGlu) flag("--swiglu");
  flag("--normalization", m.norm == models::Norm::RmsNorm ? "RMSNorm" : "LayerNorm");
  if (!m.tied_embeddings) flag("--untie-embeddings-and-output-weights");
  if (!models::has_bias(m)) {
    // Llama-style: no biases and no dropout anywhere.
    flag("--disable-bias-linear");
    flag("--attention-dropout", "0.0");
    flag("--hidden-dropout", "0.0");
  } else {
    flag("--attention-dropout", num(stack.attention_dropout));
  }

  // Precision and kernels.
  const DType rest = non_fp8_precision(stack);
  if (rest == DType::Bf16) flag("--bf16");
  if (rest == DType::Fp16) flag("--fp16");
  if (rest != DType::Bf16 && stack.grad_reduce_dtype == DType::Fp32)
    flag("--accumulate-allreduce-grads-in-fp32");  // bf16 turns it on by itself
  if (stack.precision == DType::Fp8) {
    // strata's FP8 recipe (costmodel/fp8_linear.h): Transformer Engine delayed scaling, E4M3
    // forward and E5M2 gradients ("hybrid"), on the block's linear layers only. Megatron-LM
    // at d98e8a64 does the same by default: attention stays bf16 without
    // --fp8-dot-product-attention, the output layer without --fp8-output-proj (MXFP8 only),
    // and every block is FP8 without --first-last-layers-bf16.
    flag("--fp8-format", "hybrid");
    flag("--fp8-recipe", "delayed");
  }
  flag("--attention-backend", stack.attention == costmodel::AttentionKernel::Flash2   ? "flash"
                              : stack.attention == costmodel::AttentionKernel::Cudnn ? "fused"
                                                                                      : "unfused");

  // Parallel layout.
  flag("--tensor-model-parallel-size", num(std::int64_t{s.tp}));
  flag("--pipeline-model-parallel-size", num(std::int64_t{s.pp}));
  if (m.moe) {
    // Megatron-Core's parallel folding, as strata's: experts over the tp x cp x dp ranks of a
    // stage as etp x ep x edp. --expert-tensor-parallel-size defaults to tp
    // (megatron/training/arguments.py validate_args), so it is always written.
    flag("--expert-model-parallel-size", num(std::int64_t{s.ep}));
    flag("--expert-tensor-parallel-size", num(std::int64_t{s.etp}));
  }
  if (s.cp > 1) {
    // The K/V exchange the cost model charged: Megatron-Core's cp_comm_type values "p2p"
    // (ring, its default) and "all_gather" are strata's names.
    flag("--context-parallel-size", num(std::int64_t{s.cp}));
    flag("--cp-comm-type", costmodel::to_string(stack.cp_comm));
  }
  if (s.sequence_parallel) flag("--sequence-parallel");
  if (megatron_pp_dp_order(s.rank_order)) flag("--use-tp-pp-dp-mapping");
  if (s.pp > 1) {
    if (shape.even) {
      if (s.vpp > 1) flag("--num-layers-per-virtual-pipeline-stage", num(shape.blocks.front()));
    } else if (first_last_only(p, shape)) {
      flag("--decoder-first-pipeline-num-layers", num(shape.blocks.front()));
      flag("--decoder-last-pipeline-num-layers", num(shape.blocks.back()));
    } else {
      flag("--pipeline-model-parallel-layout", megatron_layout(p));
    }
  }

  // Batch, recompute, optimizer.
  flag("--micro-batch-size", num(s.micro_batch));
  flag("--global-batch-size", num(s.global_batch));
  if (s.recompute == Recompute::Selective) {
    flag("--recompute-granularity", "selective");
  } else if (s.recompute == Recompute::Full) {
    flag("--recompute-granularity", "full");
    flag("--recompute-method", "uniform");
    flag("--recompute-num-layers", "1");
  }
  if (s.zero >= 1) flag("--use-distributed-optimizer");
  if (s.zero >= 2) {
    // ZeRO-2/3 are Megatron-FSDP's sharding strategies optim_grads / optim_grads_params
    // (sharding over dp x cp, as strata charges). Megatron-FSDP's README lists the
    // distributed optimizer, no gradient-accumulation fusion and the fsdp_dtensor checkpoint
    // format as required beside it; megatron/training/arguments.py asserts the format.
    flag("--use-megatron-fsdp");
    flag("--data-parallel-sharding-strategy", megatron_sharding_strategy(s.zero));
    flag("--no-gradient-accumulation-fusion");
    flag("--ckpt-format", "fsdp_dtensor");
  }

  // The stack's communication overlap, where Megatron-LM accepts it: param-gather overlap
  // needs the distributed optimizer and grad-reduce overlap, TP overlap needs sequence
  // parallelism (megatron/training/arguments.py asserts both).
  if (stack.overlap_grad_reduce && s.dp > 1) flag("--overlap-grad-reduce");
  if (stack.overlap_param_gather && stack.overlap_grad_reduce && s.zero >= 1 && s.dp > 1)
    flag("--overlap-param-gather");
  if (stack.overlap_tp_comm && s.tp > 1 && s.sequence_parallel) flag("--tp-comm-overlap");
  return a;
}

std::string export_megatron(const Plan& p, const SoftwareStack& plan_stack) {
  const SoftwareStack stack = planned_stack(p, plan_stack);
  const auto& s = p.strategy;
  check_megatron_can_run(p);
  std::vector<std::string> c;
  c.push_back(header(p, "Megatron-LM launch command"));
  c.push_back(fmt::format("checked against {}; stack {} ({})", kMegatronVersion, stack.name,
                          stack.version));
  c.push_back(fmt::format("data parallel size {} = world size {} / (tp {} x pp {} x cp {}); keep "
                          "--nnodes x --nproc_per_node = {}",
                          s.dp, s.gpus(), s.tp, s.pp, s.cp, s.gpus()));
  c.push_back(fmt::format("{} micro-batches per iteration = global batch {} / (micro-batch {} x "
                          "dp {})",
                          s.num_microbatches(), s.global_batch, s.micro_batch, s.dp));
  c.push_back(fmt::format("vocabulary {} (Megatron-LM pads it to a multiple of 128 x tp = {}); "
                          "replace NullTokenizer by the model's tokenizer and add the data "
                          "arguments (--data-path, ...)",
                          p.model.vocab, planner::padded_vocab(p.model.vocab, s.tp)));
  if (s.schedule == ScheduleKind::GPipe && s.pp > 1)
    c.push_back("note: Megatron-LM has no GPipe schedule; it runs 1F1B (same bubble, less "
                "activation memory than planned)");
  if (!models::has_bias(p.model) && stack.attention_dropout > 0 && !stack.flash_like())
    c.push_back(fmt::format("note: the prediction charged the stack's attention dropout ({}) "
                            "to the unfused attention; this model has none, so Megatron-LM runs "
                            "slightly faster than predicted",
                            stack.attention_dropout));
  if (!megatron_dp_pp_order(s.rank_order) && !megatron_pp_dp_order(s.rank_order))
    c.push_back(fmt::format("note: rank order {} has no Megatron-LM flag; Megatron-LM places "
                            "ranks tp-dp-pp (or tp-pp-dp with --use-tp-pp-dp-mapping)",
                            s.rank_order));
  if (stack.overlap_tp_comm && s.tp > 1 && !s.sequence_parallel)
    c.push_back("note: the stack overlaps TP communication, which Megatron-LM only does with "
                "--sequence-parallel; the plan has it off, so --tp-comm-overlap is left out");
  if (s.zero >= 2)
    c.push_back("ZeRO-" + std::to_string(s.zero) + " runs as Megatron-FSDP, which asserts that "
                "CUDA_DEVICE_MAX_CONNECTIONS is not 1 (unset it in the launch environment) and "
                "checkpoints only in the fsdp_dtensor format");
  if (stack.overlap_param_gather && s.zero == 0 && s.dp > 1)
    c.push_back("note: the stack overlaps the parameter all-gather, which needs the distributed "
                "optimizer (ZeRO-1); the plan has ZeRO 0, so --overlap-param-gather is left out");
  if (p.model.moe) {
    const auto& e = *p.model.moe;
    c.push_back(fmt::format("experts: {} routed ({} per token) over ep {} x etp {} (edp {}); "
                            "routing hyper-parameters (load-balancing loss or expert bias, "
                            "--moe-aux-loss-coeff, group-limited routing) are not in strata's "
                            "model: add the model's own",
                            e.experts, e.top_k, s.ep, s.etp, s.edp()));
    if (e.load_imbalance != 1.0 && e.capacity_factor == 0)
      c.push_back(fmt::format("note: the prediction assumed the busiest expert-parallel rank gets "
                              "{} x the mean tokens (model moe.load_imbalance), a planning "
                              "assumption and no Megatron-LM setting",
                              e.load_imbalance));
  }
  return comment_lines(c) +
         arg_lines(torchrun(s.gpus(), "pretrain_gpt.py"), megatron_args(p, plan_stack));
}

// What DeepSpeed cannot run as planned, refused by name (both DeepSpeed exports).
void check_deepspeed_can_run(const Plan& p, const SoftwareStack& stack) {
  const auto& s = p.strategy;
  // deepspeed/runtime/constants.py and precision_config.py at v0.19.5 have bf16 and fp16
  // sections and no FP8 training key (FP8 comes from model code, e.g. Transformer Engine).
  if (stack.precision == DType::Fp8)
    input_error("the plan trains in FP8, which DeepSpeed's config ({}) cannot express (no FP8 "
                "training key); export it --to megatron or --to torchtitan, or plan with "
                "--precision bf16",
                kDeepSpeedVersion);
  if (p.model.moe) {
    // DeepSpeed's MoE layer (deepspeed/moe/layer.py MoE at v0.19.5): TopKGate is a softmax
    // router; no shared experts (use_residual is PR-MoE's mixed dense MLP, not an
    // always-on expert added to the routed ones); expert-parallel groups are carved out of
    // the data-parallel ranks (deepspeed/utils/groups.py _create_expert_and_data_parallel),
    // and its experts are tensor-parallel only with enable_expert_tensor_parallelism, then
    // over the whole tp group.
    const auto& e = *p.model.moe;
    if (e.router == models::RouterKind::Sigmoid)
      input_error("model '{}' routes with a sigmoid (moe.router), which DeepSpeed's MoE gate "
                  "(TopKGate, softmax) cannot express; export it --to megatron or --to torchtitan",
                  one_line(p.model.name));
    if (e.shared_experts > 0)
      input_error("model '{}' has {} shared expert(s) (moe.shared_experts), which DeepSpeed's MoE "
                  "layer has no setting for; export it --to megatron or --to torchtitan",
                  one_line(p.model.name), e.shared_experts);
    if (s.dp % s.ep != 0)
      input_error("the plan's ep {} does not divide dp {}: DeepSpeed forms expert-parallel groups "
                  "from data-parallel ranks only; export it --to megatron", s.ep, s.dp);
    if (s.etp != 1 && s.etp != s.tp)
      input_error("the plan's etp {} is neither 1 nor tp {}: DeepSpeed's experts are tensor-"
                  "parallel over the whole tp group or not at all; export it --to megatron",
                  s.etp, s.tp);
    if (s.etp == 1 && s.tp > 1)
      input_error("the plan folds experts with etp 1 over tp {} x dp ranks; DeepSpeed would "
                  "replicate every expert over the tp group instead; export it --to megatron or "
                  "plan with --etp {}", s.tp, s.tp);
  }
  if (s.cp > 1)
    input_error("the plan uses context parallelism (cp {}), which DeepSpeed's config cannot "
                "express (its Ulysses sequence parallelism splits attention heads, a different "
                "scheme with different traffic); export it --to megatron or --to torchtitan",
                s.cp);
  // deepspeed/runtime/pipe/engine.py (PipelineEngine.__init__) asserts stage < 2.
  if (s.zero >= 2 && s.pp > 1)
    input_error("the plan combines ZeRO-{} with pipeline parallelism (pp {}), which DeepSpeed's "
                "pipeline engine refuses (ZeRO-2 and ZeRO-3 are incompatible with it); export it "
                "--to megatron or plan with --zero 1 or pp 1",
                s.zero, s.pp);
}

std::string export_deepspeed(const Plan& p, const SoftwareStack& plan_stack) {
  using J = nlohmann::ordered_json;
  const SoftwareStack stack = planned_stack(p, plan_stack);
  const auto& s = p.strategy;
  check_deepspeed_can_run(p, stack);
  J j;
  // DeepSpeed checks train_batch_size = micro-batch x gradient accumulation x dp, where dp
  // is the world size over tp x pp (deepspeed/runtime/config.py _batch_assertion).
  j["train_batch_size"] = s.global_batch;
  j["train_micro_batch_size_per_gpu"] = s.micro_batch;
  j["gradient_accumulation_steps"] = s.num_microbatches();
  if (stack.precision == DType::Bf16) j["bf16"] = J{{"enabled", true}};
  if (stack.precision == DType::Fp16) j["fp16"] = J{{"enabled", true}};
  // strata assumes gradients accumulated and reduced in fp32 (DeepSpeed's bf16 default
  // accumulates in bf16).
  j["data_types"] = J{{"grad_accum_dtype", stack.grad_reduce_dtype == DType::Fp32 ? "fp32"
                                           : stack.grad_reduce_dtype == DType::Fp16 ? "fp16"
                                                                                    : "bf16"}};
  j["zero_optimization"] = J{{"stage", s.zero}, {"overlap_comm", stack.overlap_grad_reduce}};
  // ZeRO-3 prefetches parameters by default (stage3_prefetch_bucket_size 5e7 elements); a
  // stack without prefetch is one where every gather waits: a bucket of 0 fetches nothing ahead.
  if (s.zero == 3 && !stack.zero_prefetch) j["zero_optimization"]["stage3_prefetch_bucket_size"] = 0;
  if (s.pp > 1)
    j["pipeline"] = J{{"stages", s.pp},
                      {"activation_checkpoint_interval", s.recompute == Recompute::Full ? 1 : 0}};
  if (s.recompute != Recompute::None)
    j["activation_checkpointing"] = J{{"partition_activations", s.sequence_parallel},
                                      {"contiguous_memory_optimization", false},
                                      {"cpu_checkpointing", false}};
  return j.dump(2) + "\n";
}

namespace {
// What Megatron-DeepSpeed's arguments cannot build, beyond DeepSpeed's own limits.
void check_megatron_deepspeed_can_run(const Plan& p) {
  const auto& m = p.model;
  if (m.mla)
    input_error("model '{}' uses multi-latent attention (model.mla), which {} has no arguments "
                "for; export it --to megatron or --to torchtitan",
                one_line(m.name), kMegatronDeepSpeedVersion);
  if (m.explicit_head_dim != 0)
    input_error("model '{}' has an explicit head_dim ({}), which {} has no argument for "
                "(--kv-channels is Megatron-LM's); export it --to megatron",
                one_line(m.name), m.explicit_head_dim, kMegatronDeepSpeedVersion);
  if (!m.moe) return;
  if (m.moe->first_dense_layers > 0)
    input_error("model '{}' starts with {} dense blocks (moe.first_dense_layers), which {} cannot "
                "place (--expert-interval makes every n-th block sparse); export it --to megatron",
                one_line(m.name), m.moe->first_dense_layers, kMegatronDeepSpeedVersion);
  if (m.moe->expert_ffn != m.ffn)
    input_error("model '{}' has experts {} wide (moe.expert_ffn) and a dense MLP {} wide; {} "
                "builds each expert as the model's MLP (--ffn-hidden-size); export it --to megatron",
                one_line(m.name), m.moe->expert_ffn, m.ffn, kMegatronDeepSpeedVersion);
}
}  // namespace

std::vector<Arg> megatron_deepspeed_args(const Plan& p, const SoftwareStack& plan_stack) {
  const SoftwareStack stack = planned_stack(p, plan_stack);
  const auto& s = p.strategy;
  const auto& m = p.model;
  check_deepspeed_can_run(p, stack);
  check_megatron_deepspeed_can_run(p);
  std::vector<Arg> a;
  auto flag = [&](const std::string& f, std::string v = "") { a.emplace_back(f, std::move(v)); };
  flag("--num-layers", num(m.layers));
  flag("--hidden-size", num(m.hidden));
  flag("--ffn-hidden-size", num(m.ffn));
  flag("--num-attention-heads", num(m.heads));
  if (m.kv_heads != m.heads) flag("--num-key-value-heads", num(m.kv_heads));
  flag("--seq-length", num(m.seq_len));
  flag("--max-position-embeddings", num(m.seq_len));
  if (m.positions == models::Positions::Rope) {
    flag("--use-rotary-position-embeddings");
    flag("--rotary-position-embeddings-theta", rope_base_arg(m));
  }
  if (m.activation == models::Activation::SwiGlu) flag("--swiglu");
  flag("--normalization", m.norm == models::Norm::RmsNorm ? "rmsnorm" : "layernorm");
  if (!m.tied_embeddings) flag("--untie-embeddings-and-output-weights");
  if (!models::has_bias(m)) {
    flag("--disable-bias-linear");
    flag("--attention-dropout", "0.0");
    flag("--hidden-dropout", "0.0");
  }
  if (stack.precision == DType::Bf16) flag("--bf16");
  if (stack.precision == DType::Fp16) flag("--fp16");
  flag("--tensor-model-parallel-size", num(std::int64_t{s.tp}));
  flag("--pipeline-model-parallel-size", num(std::int64_t{s.pp}));
  if (s.pp == 1) flag("--no-pipeline-parallel");
  if (s.sequence_parallel) flag("--sequence-parallel");
  flag("--micro-batch-size", num(s.micro_batch));
  flag("--global-batch-size", num(s.global_batch));
  if (s.recompute == Recompute::Selective) flag("--recompute-granularity", "selective");
  if (s.recompute == Recompute::Full) {
    flag("--deepspeed-activation-checkpointing");
    flag("--recompute-granularity", "full");
    flag("--recompute-method", "uniform");
    flag("--recompute-num-layers", "1");
  }
  if (m.moe) {
    // Megatron-DeepSpeed's MoE (megatron/arguments.py, megatron/model/transformer.py
    // get_num_experts_per_layer at 4efb479d): block i (1-based) is MoE when i is a multiple
    // of --expert-interval (default 2), so 1 makes every block sparse; each expert is the
    // model's MLP (--ffn-hidden-size wide).
    const auto& e = *m.moe;
    flag("--num-experts", num(e.experts));
    flag("--expert-interval", "1");
    flag("--topk", num(e.top_k));
    flag("--moe-expert-parallel-size", num(std::int64_t{s.ep}));
    flag("--mlp-type", "standard");
    if (s.etp > 1) flag("--enable-expert-tensor-parallelism");
    if (e.capacity_factor > 0) flag("--moe-train-capacity-factor", num(e.capacity_factor));
    else flag("--disable-moe-token-dropping");  // dropless
    // DeepSpeed samples the second expert of top-2 routing by default; strata routes to the
    // top k.
    if (e.top_k == 2) flag("--disable-moe-top2-2nd-expert-sampling");
    // Its help text: separate optimizer groups for expert parameters, "necessary for
    // techniques like ZeRO".
    if (s.zero >= 1) flag("--create-moe-param-group");
  }
  flag("--deepspeed");
  flag("--deepspeed_config", "ds_config.json");
  flag("--zero-stage", num(std::int64_t{s.zero}));
  return a;
}

std::string deepspeed_model_code_note(const Plan& p) {
  if (!p.model.moe) return "";
  const auto& e = *p.model.moe;
  const auto& s = p.strategy;
  return fmt::format(
      "DeepSpeed's config has no mixture-of-experts keys: build each MoE block in model code as "
      "deepspeed.moe.layer.MoE(hidden_size={}, expert=<the expert MLP, {} wide>, num_experts={}, "
      "ep_size={}, k={}, {}enable_expert_tensor_parallelism={}){}; --to megatron-deepspeed "
      "writes the Megatron-DeepSpeed arguments that do it",
      p.model.hidden, e.expert_ffn, e.experts, s.ep, e.top_k,
      e.capacity_factor > 0 ? fmt::format("capacity_factor={}, ", e.capacity_factor)
                            : std::string("drop_tokens=False, "),
      s.etp > 1 ? "True" : "False",
      e.first_dense_layers > 0
          ? fmt::format(" after the first {} dense blocks", e.first_dense_layers)
          : std::string());
}

std::string export_megatron_deepspeed(const Plan& p, const SoftwareStack& plan_stack) {
  const SoftwareStack stack = planned_stack(p, plan_stack);
  const auto& s = p.strategy;
  check_deepspeed_can_run(p, stack);
  check_megatron_deepspeed_can_run(p);
  const StageShape shape = stage_shape(p);
  std::vector<std::string> c;
  c.push_back(header(p, "Megatron-DeepSpeed launch command"));
  c.push_back(fmt::format("checked against {} and {}; write `strata export --to deepspeed` to "
                          "ds_config.json",
                          kMegatronDeepSpeedVersion, kDeepSpeedVersion));
  if (s.schedule == ScheduleKind::Interleaved)
    c.push_back(fmt::format("DeepSpeed's pipeline engine has no interleaved schedule: vpp {} is "
                            "dropped (expect a larger bubble than planned)",
                            s.vpp));
  if (s.schedule == ScheduleKind::GPipe && s.pp > 1)
    c.push_back("DeepSpeed runs 1F1B instead of GPipe (same bubble, less activation memory)");
  if (s.pp > 1 && !shape.even)
    c.push_back("the plan's stages are uneven; DeepSpeed's PipelineModule partitions by "
                "parameters, which may place the blocks differently");
  return comment_lines(c) + arg_lines(torchrun(s.gpus(), "pretrain_gpt.py"),
                                      megatron_deepspeed_args(p, stack));
}

std::vector<std::vector<std::string>> torchtitan_module_fqns(const Plan& p) {
  std::vector<std::vector<std::string>> out;
  const int head = static_cast<int>(p.model.layers) + 1;
  for (const auto& groups : p.stage_layers) {
    std::vector<std::string> names;
    for (int g : groups) {
      if (g == 0) names.push_back("tok_embeddings");
      else if (g == head) { names.push_back("norm"); names.push_back("output"); }
      else names.push_back(fmt::format("layers.{}", g - 1));
    }
    out.push_back(std::move(names));
  }
  return out;
}

namespace {
// What TorchTitan v0.2.2 cannot run as planned, refused by name.
void check_torchtitan_can_run(const Plan& p) {
  const auto& s = p.strategy;
  if (!p.model.moe) return;
  // torchtitan/models/moe/moe.py MoEArgs at v0.2.2 has no capacity: its MoE is dropless.
  if (p.model.moe->capacity_factor > 0)
    input_error("model '{}' caps expert tokens at capacity factor {} (moe.capacity_factor); "
                "{}'s MoE is dropless and has no capacity setting; export it --to megatron",
                one_line(p.model.name), p.model.moe->capacity_factor, kTorchTitanVersion);
  // torchtitan/distributed/parallel_dims.py: "Currently we only support ETP=TP or ETP=1".
  if (s.ep > 1 && s.etp != 1 && s.etp != s.tp)
    input_error("the plan's etp {} is neither 1 nor tp {}, the only expert tensor parallel "
                "degrees {} supports; export it --to megatron",
                s.etp, s.tp, kTorchTitanVersion);
  if (s.ep == 1 && s.etp > 1)
    input_error("the plan splits experts with etp {} and no expert parallelism; {} applies "
                "expert_tensor_parallel_degree only with ep > 1; export it --to megatron",
                s.etp, kTorchTitanVersion);
}
}  // namespace

std::string export_torchtitan(const Plan& p, const SoftwareStack& plan_stack) {
  check_torchtitan_can_run(p);
  const SoftwareStack stack = planned_stack(p, plan_stack);
  const auto& s = p.strategy;
  const std::int64_t m = s.num_microbatches();
  std::vector<std::string> c;
  c.push_back(header(p, "TorchTitan job config"));
  c.push_back(fmt::format("for {} (torchtitan/config/job_config.py); TorchTitan main reads "
                          "Python configs instead of TOML",
                          kTorchTitanVersion));
  c.push_back(fmt::format("merge into train_configs/*.toml; set [model] name/flavor to a flavor "
                          "with n_layers {}, dim {}, n_heads {}, n_kv_heads {}, vocab {} (plan "
                          "model {})",
                          p.model.layers, p.model.hidden, p.model.heads, p.model.kv_heads,
                          p.model.vocab, p.model.name));
  if (p.model.moe) {
    // The MoE shape is model code in TorchTitan (MoEArgs of the deepseek_v3 / llama4 / qwen3
    // flavors), like the dense shape.
    const auto& e = *p.model.moe;
    c.push_back(fmt::format("the flavor's MoE must match: {} experts of width {}, top_k {}, {} "
                            "shared expert(s) of width {}, score_func {}, the first {} layers "
                            "dense{}",
                            e.experts, e.expert_ffn, e.top_k, e.shared_experts,
                            e.shared_experts > 0 ? e.shared_expert_ffn : 0,
                            models::to_string(e.router), e.first_dense_layers,
                            p.model.mla ? "; multi-latent attention as the deepseek_v3 flavors" : ""));
  }
  std::string out = comment_lines(c);
  if (stack.precision == DType::Fp8) {
    // torchao float8 training on the nn.Linear layers (converter registered as
    // "quantize.linear.float8" in torchtitan/components/quantization/float8.py at v0.2.2),
    // the LM head ("output") left in bf16 as strata's recipe; attention's SDPA and the
    // embedding are no nn.Linear and stay bf16.
    out += "\n[model]\n";
    out += "converters = [\"quantize.linear.float8\"]\n";
    out += "\n[quantize.linear.float8]\n";
    out += "# tensorwise: per-tensor dynamic scaling, the nearest torchao recipe to the delayed\n"
           "# per-tensor scaling strata charges (same GEMMs; the scale comes from the current\n"
           "# tensor instead of the amax history). Its TP all-gathers run in float8, less\n"
           "# traffic than the bf16 gathers strata charges.\n";
    out += "recipe_name = \"tensorwise\"\n";
    out += "filter_fqns = [\"output\"]\n";
    // torch.compile fuses torchao's float8 scaling / cast kernels: "required for competitive
    // performance" (TorchTitan docs/float8.md at v0.2.2).
    out += "\n[compile]\n";
    out += "enable = true\n";
    out += "components = [\"model\", \"loss\"]\n";
  }

  // [training]: local_batch_size is the per-data-parallel-rank batch of one step. With
  // pipeline parallelism TorchTitan splits it into pipeline micro-batches; without, it is one
  // forward/backward and global_batch_size / (local x dp) gives the gradient accumulation.
  const std::int64_t local = s.pp > 1 ? s.micro_batch * m : s.micro_batch;
  out += "\n[training]\n";
  out += fmt::format("local_batch_size = {}\n", local);
  out += fmt::format("global_batch_size = {}\n", s.global_batch);
  out += fmt::format("seq_len = {}\n", p.model.seq_len);
  // v0.2.2 accepts bfloat16 | float32 for the parameters and float32 for the reduction.
  if (stack.precision == DType::Fp16)
    out += "# note: TorchTitan has no fp16 mixed precision; bfloat16 is the nearest\n";
  out += fmt::format("mixed_precision_param = {}\n",
                     toml_string(stack.precision == DType::Fp32 || stack.precision == DType::Tf32
                                     ? "float32"
                                     : "bfloat16"));
  out += "mixed_precision_reduce = \"float32\"\n";

  // [parallelism]: ZeRO-3 is FSDP (data_parallel_shard_degree), ZeRO-0 is DDP
  // (data_parallel_replicate_degree). TorchTitan's DDP only runs without TP/PP/CP (with
  // cp > 1 it always applies FSDP over dp x cp), and it has no ZeRO-1/2: those run as FSDP.
  // With ep > 1 TorchTitan folds the experts over the FSDP ranks (ParallelDims: efsdp =
  // dp_shard x cp x tp / (etp x ep)), so data parallelism must be the shard degree.
  const bool ddp = s.zero == 0 && s.tp == 1 && s.pp == 1 && s.cp == 1 && s.ep == 1;
  out += "\n[parallelism]\n";
  if (!ddp && s.zero != 3 && s.dp * s.cp > 1)
    out += s.zero == 0
               ? "# TorchTitan's DDP cannot combine with TP/PP/CP/EP: data parallelism runs as FSDP\n"
                 "# (ZeRO-3), using less memory and more data-parallel traffic than planned.\n"
               : fmt::format("# TorchTitan has no ZeRO-{}: FSDP also shards the weights (ZeRO-3),\n"
                             "# using less memory and more data-parallel traffic than planned.\n",
                             s.zero);
  out += fmt::format("data_parallel_replicate_degree = {}\n", ddp ? s.dp : 1);
  out += fmt::format("data_parallel_shard_degree = {}\n", ddp ? 1 : s.dp);
  // strata's ZeRO-3 gathers a layer's weights again for its backward; TorchTitan's "default"
  // keeps them gathered from the forward when pp > 1, so the plan asks for "always".
  if (s.zero == 3 && s.pp > 1) out += "fsdp_reshard_after_forward = \"always\"\n";
  if (s.cp > 1) {
    // TorchTitan's rotate methods: "alltoall" passes K/V shards between ranks (the ring,
    // strata's p2p), "allgather" gathers them all; its default "headtail" load balancer is
    // the causal chunk balancing strata charges.
    out += fmt::format("context_parallel_degree = {}\n", s.cp);
    out += fmt::format("context_parallel_rotate_method = {}\n",
                       toml_string(stack.cp_comm == costmodel::CpCommType::P2p ? "alltoall"
                                                                               : "allgather"));
  }
  out += fmt::format("tensor_parallel_degree = {}\n", s.tp);
  if (p.model.moe && s.ep > 1) {
    // Same folding as Megatron-Core's and strata's: experts over the tp x cp x dp ranks as
    // etp x ep x edp (job_config.py Parallelism: "etp = tp" or "etp = 1").
    out += fmt::format("expert_parallel_degree = {}\n", s.ep);
    out += fmt::format("expert_tensor_parallel_degree = {}\n", s.etp);
  }
  if (s.tp > 1 && !s.sequence_parallel)
    out += "# note: TorchTitan's tensor parallelism always shards norms along the sequence\n"
           "# (sequence parallel); the plan assumed it off.\n";
  out += fmt::format("pipeline_parallel_degree = {}\n", s.pp);
  if (s.pp > 1) {
    const char* sched = s.schedule == ScheduleKind::GPipe         ? "GPipe"
                        : s.schedule == ScheduleKind::Interleaved ? "Interleaved1F1B"
                                                                  : "1F1B";
    out += fmt::format("pipeline_parallel_schedule = {}\n", toml_string(sched));
    out += fmt::format("pipeline_parallel_microbatch_size = {}\n", s.micro_batch);
    // The plan's stage map, one model part per virtual stage (stage-major within a chunk,
    // as TorchTitan assigns looped schedules' parts round-robin over the ranks).
    out += "module_fqns_per_model_part = [\n";
    for (const auto& part : torchtitan_module_fqns(p)) {
      out += "  [";
      for (std::size_t i = 0; i < part.size(); ++i) out += (i ? ", " : "") + toml_string(part[i]);
      out += "],\n";
    }
    out += "]\n";
  }

  out += "\n[activation_checkpoint]\n";
  out += fmt::format("mode = {}\n", toml_string(planner::to_string(s.recompute)));
  if (s.recompute == Recompute::Selective)
    out += "selective_ac_option = \"op\"  # op-level selective recompute\n";
  return out;
}

std::string export_plan(const Plan& p, const SoftwareStack& stack, ExportTarget t) {
  switch (t) {
    case ExportTarget::Megatron: return export_megatron(p, stack);
    case ExportTarget::DeepSpeed: return export_deepspeed(p, stack);
    case ExportTarget::MegatronDeepSpeed: return export_megatron_deepspeed(p, stack);
    case ExportTarget::TorchTitan: return export_torchtitan(p, stack);
  }
  STRATA_CHECK(false, "unknown export target");
  return {};
}

}  // namespace strata::exports
