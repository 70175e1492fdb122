// Plan -> Megatron-LM: pretrain_gpt.py arguments and the launch command
// (export/export_formats.h). Names: Megatron-LM main d98e8a64 (export/frameworks/megatron_args.yaml).
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/errors.h"
#include "export/export_common.h"
#include "export/export_formats.h"
#include "export/launch.h"
#include "export/megatron_layer_pattern.h"
#include "export/safe_text.h"
#include "planner/embedding_loss_split.h"
#include "planner/first_last_stages.h"

namespace strata::exports {

namespace {

// Megatron-LM --moe-layer-freq for a model with dense blocks: its list form
// (megatron/training/arguments.py moe_freq_type / _eval_pattern at d98e8a64: digits, commas,
// brackets, parentheses, + and *), whose length must be --num-layers; e.g. "([0]*3+[1]*58)"
// for DeepSeek-V3, "([0]*1+[1]*1)*24" for Llama-4 Maverick. Never the integer form: N makes
// the first block MoE (export/megatron_layer_pattern.h), strata's layer_step its N-th.
std::string megatron_moe_layer_freq(const models::ModelSpec& m) {
  return moe_layer_freq_pattern({m.moe->first_dense_layers, m.moe->layer_step}, m.layers);
}

// Megatron-LM places ranks tp-cp-(ep)-dp-pp, or tp-cp-(ep)-pp-dp with --use-tp-pp-dp-mapping;
// strata's orders without cp put it right after tp (planner/strategy.h).
bool megatron_dp_pp_order(const std::string& o) { return o == "tp-dp-pp" || o == "tp-cp-dp-pp"; }
bool megatron_pp_dp_order(const std::string& o) { return o == "tp-pp-dp" || o == "tp-cp-pp-dp"; }

// What Megatron-LM cannot run as planned, refused by name.
// `stack`: the stack as planned (planned_stack).
void check_megatron_can_run(const Plan& p, const SoftwareStack& stack) {
  refuse_recompute_modules(p.strategy, "Megatron-LM");
  // TransformerConfig.__post_init__ at d98e8a64 on recompute_modules: moe_act only with grouped
  // GEMMs (written for every model with experts), mla_up_proj only with multi-latent attention,
  // and neither moe_act nor layernorm under FP8 delayed scaling, the recipe the export writes.
  const auto& rm = p.strategy.recompute_modules;
  if (rm.moe_act && !p.model.moe)
    input_error("export megatron: the plan recomputes moe_act, but model '{}' has no experts (Megatron-LM "
                "recomputes moe_act only in grouped-GEMM experts)", one_line(p.model.name));
  if (rm.mla_up_proj && !p.model.mla)
    input_error("export megatron: the plan recomputes mla_up_proj, but model '{}' has no multi-latent "
                "attention, which Megatron-LM requires for it", one_line(p.model.name));
  if ((rm.moe_act || rm.layernorm) && p.strategy.recompute == Recompute::Selective &&
      stack.precision == DType::Fp8)
    input_error("export megatron: the plan recomputes {} in FP8, which Megatron-LM refuses under the "
                "delayed-scaling recipe the export writes (\"Delayed scaling does not support moe_act and "
                "layernorm recompute for fp8\"); recompute other modules or plan bf16",
                rm.moe_act && rm.layernorm ? "moe_act and layernorm" : rm.moe_act ? "moe_act" : "layernorm");
  // TransformerConfig.__post_init__ at d98e8a64: "Bias in Moe is only supported when ETP==1".
  if (p.model.moe && models::has_bias(p.model) && p.strategy.etp > 1)
    input_error("export megatron: model '{}' has linear biases (GELU), which Megatron-LM's "
                "experts support only with expert tensor parallel size 1; the plan has etp {}",
                one_line(p.model.name), p.strategy.etp);
}

}  // namespace

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
    if (std::find(groups.begin(), groups.end(), static_cast<int>(head)) != groups.end()) {
      // MTP blocks sit with the loss, after the last decoder layer: Megatron's layout check
      // (PipelineParallelLayerLayout.validate_layer_layout at d98e8a64) wants "m" after every
      // "t", as many as --mtp-num-layers, in a rank's last virtual stage.
      if (p.model.mtp_layers == 1) parts.push_back("m");
      else if (p.model.mtp_layers > 1) parts.push_back(fmt::format("m*{}", p.model.mtp_layers));
      parts.push_back("L");
    }
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "," : "") + parts[i];
  }
  return out;
}

namespace {

// megatron_args in parts, each appending its flags in the order Megatron-LM's arguments
// are read back (export/import_megatron.cpp).

void model_flags(FlagWriter& flag, const models::ModelSpec& m, const SoftwareStack& stack) {
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
  if (m.qk_norm) flag("--qk-layernorm");  // per-head Q and K norms (model.qk_norm)
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
    if (m.has_dense_layers()) flag("--moe-layer-freq", megatron_moe_layer_freq(m));
    flag("--moe-router-score-function",
         e.router == models::RouterKind::Sigmoid ? "sigmoid" : "softmax");
    // strata's sigmoid router is DeepSeek-V3's, balanced without an auxiliary loss by a
    // per-expert bias added to the scores before the top-k: Megatron's
    // moe_router_enable_expert_bias, which TransformerConfig.__post_init__ at d98e8a64 allows
    // only with the sigmoid (or sqrtsoftplus) score function. The balanced routing it aims
    // at is what the cost model charges (moe.load_imbalance 1 unless set).
    if (e.router == models::RouterKind::Sigmoid) flag("--moe-router-enable-expert-bias");
    // Megatron refuses softmax after a top-1 selection (its gradient is zero):
    // TransformerConfig.__post_init__ asks for --moe-router-pre-softmax when topk is 1.
    if (e.top_k == 1 && e.router == models::RouterKind::Softmax) flag("--moe-router-pre-softmax");
    // Group-limited (node-limited) routing (megatron/training/arguments.py _add_moe_args).
    if (e.group_limited()) {
      flag("--moe-router-num-groups", num(e.groups));
      flag("--moe-router-group-topk", num(e.max_groups_per_token));
    }
    if (e.capacity_factor > 0) {
      // strata charges every expert padded to the capacity (costmodel/expert_dispatch_cost.h).
      flag("--moe-expert-capacity-factor", num(e.capacity_factor));
      flag("--moe-pad-expert-input-to-capacity");
    }
    // The exchange and kernels the cost model charges, always stated: the stack's dispatcher
    // (moe_dispatcher: alltoall, allgather, Megatron's default; deepep: the flex dispatcher on
    // DeepEP's kernels, _add_moe_args at d98e8a64: --moe-token-dispatcher-type flex with
    // --moe-flex-dispatcher-backend deepep); grouped GEMMs over the local experts.
    switch (stack.moe_dispatcher) {
      case costmodel::MoeDispatcher::DeepEp:
        flag("--moe-token-dispatcher-type", "flex");
        flag("--moe-flex-dispatcher-backend", "deepep");
        break;
      case costmodel::MoeDispatcher::AllGather: flag("--moe-token-dispatcher-type", "allgather"); break;
      case costmodel::MoeDispatcher::AllToAll: flag("--moe-token-dispatcher-type", "alltoall"); break;
    }
    flag("--moe-grouped-gemm");
  }
  // Multi-token prediction (DeepSeek-V3's num_nextn_predict_layers): Megatron-LM builds
  // mtp_num_layers sequential MTP blocks after the decoder, on the last pipeline stage
  // unless a layout places them (TransformerConfig.mtp_num_layers at d98e8a64).
  if (m.mtp_layers > 0) flag("--mtp-num-layers", num(m.mtp_layers));
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
}

void precision_flags(FlagWriter& flag, const SoftwareStack& stack) {
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
  // A FlashAttention-1 stack's plan runs on Megatron-LM's flash backend (FlashAttention 2 or 3).
  flag("--attention-backend", stack.attention == costmodel::AttentionKernel::Flash2 ||
                                      stack.attention == costmodel::AttentionKernel::Flash1
                                  ? "flash"
                              : stack.attention == costmodel::AttentionKernel::Cudnn ? "fused"
                                                                                      : "unfused");
}

void layout_flags(FlagWriter& flag, const Plan& p, const SoftwareStack& stack, const StageShape& shape) {
  const auto& s = p.strategy;
  const auto& m = p.model;
  // Parallel layout.
  flag("--tensor-model-parallel-size", num(std::int64_t{s.tp}));
  flag("--pipeline-model-parallel-size", num(std::int64_t{s.pp}));
  if (m.moe) {
    // Megatron-Core's parallel folding, as strata's: experts over the tp x cp x dp ranks of a
    // stage as etp x ep x edp. --expert-tensor-parallel-size defaults to tp
    // (megatron/training/arguments.py validate_args), so it is always written.
    flag("--expert-model-parallel-size", num(std::int64_t{s.ep}));
    flag("--expert-tensor-parallel-size", num(std::int64_t{s.etp}));
    // The batch-level EP overlap the cost model charged (planner/ep_overlap.h); the flag comes
    // from ModelParallelConfig.overlap_moe_expert_parallel_comm (d98e8a64), and its weight-gradient
    // split from ModelParallelConfig.delay_wgrad_compute.
    if (s.ep_overlap) flag("--overlap-moe-expert-parallel-comm");
    if (s.delay_wgrad) flag("--delay-wgrad-compute");
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
    } else if (const auto fl = planner::first_last_of(shape.blocks, s.pp, s.vpp)) {
      // Uneven stages Megatron-LM's first/last counts express (planner/first_last_stages.h),
      // with virtual stages too: then only as --num-virtual-stages-per-pipeline-rank.
      flag("--decoder-first-pipeline-num-layers", num(*fl->first));
      flag("--decoder-last-pipeline-num-layers", num(*fl->last));
      if (s.vpp > 1) flag("--num-virtual-stages-per-pipeline-rank", num(std::int64_t{s.vpp}));
    } else if (const auto el = m.mtp_layers == 0 ? planner::embedding_loss_split_of(shape.blocks, m.layers, s.pp, s.vpp)
                                                 : std::nullopt) {
      // The embedding and / or loss counted as a layer (planner/embedding_loss_split.h); with
      // MTP blocks the layout states where they go.
      if (el->embedding) flag("--account-for-embedding-in-pipeline-split");
      if (el->loss) flag("--account-for-loss-in-pipeline-split");
      if (s.vpp > 1) flag("--num-virtual-stages-per-pipeline-rank", num(std::int64_t{s.vpp}));
    } else {
      flag("--pipeline-model-parallel-layout", megatron_layout(p));
    }
  }
}

void training_flags(FlagWriter& flag, const Plan& p, const SoftwareStack& stack,
                    const ExportOptions& opt) {
  const planner::Strategy& s = p.strategy;
  // Batch, recompute, optimizer.
  flag("--micro-batch-size", num(s.micro_batch));
  flag("--global-batch-size", num(s.global_batch));
  if (opt.train_tokens > 0) flag("--train-iters", num(train_iterations(p, opt.train_tokens)));
  if (s.recompute == Recompute::Selective) {
    flag("--recompute-granularity", "selective");
    // Megatron-Core's modules by their own names (TransformerConfig.recompute_modules, a list
    // argument; its default is core_attn alone, strata's selective mode without modules).
    if (s.recompute_modules.megatron())
      flag("--recompute-modules", fmt::format("{}", fmt::join(costmodel::recompute_module_names(s.recompute_modules), " ")));
  } else if (s.recompute == Recompute::Full) {
    flag("--recompute-granularity", "full");
    // Every block re-run alone (uniform 1), or the first n of each model chunk (block n:
    // megatron/core/recompute.py at d98e8a64).
    flag("--recompute-method", s.recompute_layers > 0 ? "block" : "uniform");
    flag("--recompute-num-layers", num(std::int64_t{s.recompute_layers > 0 ? s.recompute_layers : 1}));
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
}

}  // namespace

std::vector<Arg> megatron_args(const Plan& p, const SoftwareStack& plan_stack,
                               const ExportOptions& opt) {
  const SoftwareStack stack = planned_stack(p, plan_stack);
  check_megatron_can_run(p, stack);
  const auto& m = p.model;
  const StageShape shape = stage_shape(p);
  FlagWriter flag;
  model_flags(flag, m, stack);
  precision_flags(flag, stack);
  layout_flags(flag, p, stack, shape);
  training_flags(flag, p, stack, opt);
  return flag.args();
}

namespace {
// The environment Megatron-LM's validate_args checks (megatron/training/arguments.py at
// d98e8a64): with tp or cp > 1 on GPUs before Blackwell it asserts
// CUDA_DEVICE_MAX_CONNECTIONS=1 (kernels queued in issue order, so TP communication
// overlaps as planned); Megatron-FSDP asserts it is not 1 (and only warns about tp/cp).
std::vector<std::pair<std::string, std::string>> megatron_env(const planner::Strategy& s) {
  if (s.zero >= 2) return {{"CUDA_DEVICE_MAX_CONNECTIONS", ""}};
  if (s.tp > 1 || s.cp > 1) return {{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}};
  return {};
}
}  // namespace

std::string export_megatron(const Plan& p, const SoftwareStack& plan_stack, const ExportOptions& opt) {
  const SoftwareStack stack = planned_stack(p, plan_stack);
  const auto& s = p.strategy;
  check_megatron_can_run(p, stack);
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
                "CUDA_DEVICE_MAX_CONNECTIONS is not 1 and checkpoints only in the fsdp_dtensor "
                "format");
  if (opt.train_tokens > 0)
    c.push_back(fmt::format("--train-iters {} = ceil({} tokens / (global batch {} x seq_len {}))",
                            train_iterations(p, opt.train_tokens), opt.train_tokens,
                            s.global_batch, p.model.seq_len));
  if (stack.overlap_param_gather && s.zero == 0 && s.dp > 1)
    c.push_back("note: the stack overlaps the parameter all-gather, which needs the distributed "
                "optimizer (ZeRO-1); the plan has ZeRO 0, so --overlap-param-gather is left out");
  if (p.model.moe) {
    const auto& e = *p.model.moe;
    c.push_back(fmt::format("experts: {} routed ({} per token) over ep {} x etp {} (edp {}); "
                            "routing hyper-parameters (--moe-aux-loss-coeff, "
                            "--moe-router-topk-scaling-factor) are not in strata's model: add the "
                            "model's own{}",
                            e.experts, e.top_k, s.ep, s.etp, s.edp(),
                            e.group_limited() ? "" : " (and --moe-router-num-groups/--moe-router-group-topk "
                                                     "if it limits a token's expert groups)"));
    if (s.tp > 1 && s.ep > 1 && !s.sequence_parallel)
      c.push_back("note: Megatron-LM warns that expert parallelism with tensor parallelism "
                  "needs --sequence-parallel (ModelParallelConfig at d98e8a64); the plan has it "
                  "off");
    if (e.load_imbalance != 1.0 && e.capacity_factor == 0)
      c.push_back(fmt::format("note: the prediction assumed the busiest expert-parallel rank gets "
                              "{} x the mean tokens (model moe.load_imbalance), a planning "
                              "assumption and no Megatron-LM setting",
                              e.load_imbalance));
  }
  LaunchSpec spec;
  spec.gpus = s.gpus();
  spec.gpus_per_node = opt.gpus_per_node;
  spec.job_name = "strata-" + p.model.name;
  spec.env = megatron_env(s);
  return launch_text(opt.launcher, spec, comment_lines(c), "pretrain_gpt.py",
                     megatron_args(p, plan_stack, opt));
}

}  // namespace strata::exports
