// Plan -> DeepSpeed: the config JSON, and the Megatron-DeepSpeed arguments for its
// model-parallel half (export/export_formats.h). Names: DeepSpeed v0.19.5 and Megatron-DeepSpeed
// 4efb479d (export/frameworks/deepspeed_config.yaml, megatron_deepspeed_args.yaml).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "export/export_common.h"
#include "export/export_formats.h"
#include "export/import_deepspeed.h"
#include "export/launch.h"
#include "export/safe_text.h"

namespace strata::exports {

namespace {

// What DeepSpeed cannot run as planned, refused by name (both DeepSpeed exports).
void check_deepspeed_can_run(const Plan& p, const SoftwareStack& stack) {
  const auto& s = p.strategy;
  if (p.strategy.ep_overlap)
    input_error("the plan runs Megatron-Core's batch-level EP overlap (strategy.ep_overlap), which DeepSpeed "
                "has no setting for; export it --to megatron, or simulate it without --ep-overlap");
  refuse_recompute_modules(p.strategy, "DeepSpeed");
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

// What Megatron-DeepSpeed's arguments cannot build, beyond DeepSpeed's own limits.
void check_megatron_deepspeed_can_run(const Plan& p) {
  const auto& m = p.model;
  // megatron/arguments.py at 4efb479d has no multi-token-prediction argument.
  if (m.mtp_layers > 0)
    input_error("model '{}' trains {} multi-token-prediction block(s) (model.mtp_layers), which "
                "{} has no arguments for; export it --to megatron",
                one_line(m.name), m.mtp_layers, kMegatronDeepSpeedVersion);
  refuse_recompute_modules(p.strategy, "DeepSpeed");
  if (m.mla)
    input_error("model '{}' uses multi-latent attention (model.mla), which {} has no arguments "
                "for; export it --to megatron or --to torchtitan",
                one_line(m.name), kMegatronDeepSpeedVersion);
  if (m.qk_norm)
    input_error("model '{}' has per-head Q and K norms (model.qk_norm), which {} has no argument for "
                "(--qk-layernorm is Megatron-LM's); export it --to megatron",
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
  // A stack that gathers module by module with its own threshold or bucket (DeepSpeed's
  // defaults are left out of the config).
  if (s.zero == 3 && stack.zero3_gather == costmodel::Zero3Gather::Module) {
    if (stack.zero3_persist_params != kDeepSpeedPersistParams)
      j["zero_optimization"]["stage3_param_persistence_threshold"] = static_cast<std::int64_t>(stack.zero3_persist_params);
    if (stack.zero_prefetch && stack.zero3_gather_bucket_params > 0 &&
        stack.zero3_gather_bucket_params != kDeepSpeedPrefetchBucketParams)
      j["zero_optimization"]["stage3_prefetch_bucket_size"] = static_cast<std::int64_t>(stack.zero3_gather_bucket_params);
  }
  if (s.pp > 1)
    j["pipeline"] = J{{"stages", s.pp},
                      {"activation_checkpoint_interval", s.recompute == Recompute::Full ? 1 : 0}};
  if (s.recompute != Recompute::None)
    j["activation_checkpointing"] = J{{"partition_activations", s.sequence_parallel},
                                      {"contiguous_memory_optimization", false},
                                      {"cpu_checkpointing", false}};
  return j.dump(2) + "\n";
}

std::vector<Arg> megatron_deepspeed_args(const Plan& p, const SoftwareStack& plan_stack,
                                         const ExportOptions& opt) {
  const SoftwareStack stack = planned_stack(p, plan_stack);
  const auto& s = p.strategy;
  const auto& m = p.model;
  check_deepspeed_can_run(p, stack);
  check_megatron_deepspeed_can_run(p);
  FlagWriter flag;
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
  if (opt.train_tokens > 0) flag("--train-iters", num(train_iterations(p, opt.train_tokens)));
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
    // of --expert-interval (default 2): strata's moe.layer_step rule, so 1 makes every block
    // sparse; each expert is the model's MLP (--ffn-hidden-size wide).
    const auto& e = *m.moe;
    flag("--num-experts", num(e.experts));
    flag("--expert-interval", num(e.layer_step));
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
  return flag.args();
}

namespace {
// The MoE part of deepspeed_model_code_note: the deepspeed.moe.layer.MoE call.
std::string deepspeed_moe_layer_note(const Plan& p) {
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
          : e.layer_step > 1 ? fmt::format(" on the blocks numbered (from 1) a multiple of {}, the others dense", e.layer_step)
                             : std::string());
}
}  // namespace

std::string deepspeed_model_code_note(const Plan& p) {
  std::vector<std::string> parts;
  if (p.model.moe) parts.push_back(deepspeed_moe_layer_note(p));
  // DeepSpeed v0.19.5 ships no training module for either (deepspeed/ has no MLA attention
  // and no MTP head): the job's own model code must hold them, as it holds the rest.
  if (p.model.mla)
    parts.push_back("DeepSpeed has no multi-latent attention layer: the model code must "
                    "implement it (q/kv low-rank projections as model.mla)");
  if (p.model.mtp_layers > 0)
    parts.push_back(fmt::format("DeepSpeed has no multi-token-prediction module: the model code "
                                "must add the {} MTP block(s) and their loss",
                                p.model.mtp_layers));
  std::string out;
  for (const auto& part : parts) out += (out.empty() ? "" : "; ") + part;
  return out;
}

std::string deepspeed_zero3_gather_note(const Plan& p, const SoftwareStack& stack) {
  if (p.strategy.zero != 3 || stack.zero3_gather == costmodel::Zero3Gather::Module) return "";
  return fmt::format("DeepSpeed's stage 3 gathers parameters module by module (one all-gather per weight-holding "
                     "nn.Module and pass), but this plan was predicted with stack {}'s per-block gathers, which is "
                     "optimistic over hundreds of ranks: plan again with --stack deepspeed-2022-zero3 (DeepSpeed "
                     ">= 0.6) or deepspeed-2021-zero3 (0.5) to predict the DeepSpeed job",
                     stack.name);
}

std::string export_megatron_deepspeed(const Plan& p, const SoftwareStack& plan_stack,
                                      const ExportOptions& opt) {
  const SoftwareStack stack = planned_stack(p, plan_stack);
  const auto& s = p.strategy;
  check_deepspeed_can_run(p, stack);
  check_megatron_deepspeed_can_run(p);
  const StageShape shape = stage_shape(p);
  std::vector<std::string> c;
  c.push_back(header(p, "Megatron-DeepSpeed launch command"));
  c.push_back(fmt::format("checked against {} and {}; {}",
                          kMegatronDeepSpeedVersion, kDeepSpeedVersion,
                          opt.launcher == Launcher::Slurm
                              ? "the script writes ds_config.json (`strata export --to deepspeed`)"
                              : "write `strata export --to deepspeed` to ds_config.json"));
  if (s.schedule == ScheduleKind::Interleaved)
    c.push_back(fmt::format("DeepSpeed's pipeline engine has no interleaved schedule: vpp {} is "
                            "dropped (expect a larger bubble than planned)",
                            s.vpp));
  if (s.schedule == ScheduleKind::GPipe && s.pp > 1)
    c.push_back("DeepSpeed runs 1F1B instead of GPipe (same bubble, less activation memory)");
  if (s.pp > 1 && !shape.even)
    c.push_back("the plan's stages are uneven; DeepSpeed's PipelineModule partitions by "
                "parameters, which may place the blocks differently");
  LaunchSpec spec;
  spec.gpus = s.gpus();
  spec.gpus_per_node = opt.gpus_per_node;
  spec.job_name = "strata-" + p.model.name;
  spec.files.push_back({"ds_config.json", export_deepspeed(p, plan_stack)});
  return launch_text(opt.launcher, spec, comment_lines(c), "pretrain_gpt.py",
                     megatron_deepspeed_args(p, stack, opt));
}

}  // namespace strata::exports
