// Plan -> TorchTitan v0.2.2 job-config TOML (export/export_formats.h). Names:
// torchtitan/config/job_config.py at v0.2.2 (export/frameworks/torchtitan_config.yaml).
#include <fmt/format.h>

#include "common/errors.h"
#include "export/export_common.h"
#include "export/export_formats.h"
#include "export/launch.h"
#include "export/safe_text.h"

namespace strata::exports {

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
  if (p.strategy.ep_overlap)
    input_error("the plan runs Megatron-Core's batch-level EP overlap (strategy.ep_overlap), which {} "
                "has no setting for; export it --to megatron, or simulate it without --ep-overlap", kTorchTitanVersion);
  // torchtitan/models at v0.2.2 (deepseek_v3, llama4, qwen3, gpt_oss) builds no
  // multi-token-prediction module and its job config has no key for one.
  if (p.model.mtp_layers > 0)
    input_error("model '{}' trains {} multi-token-prediction block(s) (model.mtp_layers), which "
                "{} has no module or setting for; export it --to megatron",
                one_line(p.model.name), p.model.mtp_layers, kTorchTitanVersion);
  refuse_recompute_modules(p.strategy, "TorchTitan");
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
  // Without ep TorchTitan splits the experts over the whole tp group like the dense MLP
  // (torchtitan/models/llama4/infra/parallelize.py apply_moe_ep_tp at v0.2.2: experts_mesh =
  // tp_mesh when there is no ep mesh; expert_tensor_parallel_degree has no effect), i.e.
  // etp = tp.
  if (s.ep == 1 && s.etp != s.tp)
    input_error("the plan splits experts with etp {} over tp {} without expert parallelism; {} "
                "splits them over the whole tp group when ep is 1 (etp = tp); export it --to "
                "megatron or plan with --etp {}",
                s.etp, s.tp, kTorchTitanVersion, s.tp);
}
// Slurm: the script writes the TOML and starts TorchTitan's trainer module on every node,
// as TorchTitan's own multinode_trainer.slurm does (torchrun -m torchtitan.train
// --job.config_file FILE at v0.2.2).
std::string torchtitan_slurm_script(const Plan& p, const std::string& toml, const ExportOptions& opt) {
  LaunchSpec spec;
  spec.gpus = p.strategy.gpus();
  spec.gpus_per_node = opt.gpus_per_node;
  spec.job_name = "strata-" + p.model.name;
  spec.files.push_back({"strata_torchtitan.toml", toml});
  return launch_text(opt.launcher, spec,
                     comment_lines({header(p, "TorchTitan Slurm job"),
                                    "the TOML below needs the [model] name/flavor of the plan's "
                                    "model (see its comments)"}),
                     "-m torchtitan.train", {{"--job.config_file", "strata_torchtitan.toml"}});
}
}  // namespace

std::string export_torchtitan(const Plan& p, const SoftwareStack& plan_stack, const ExportOptions& opt) {
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
                          "with n_layers {}, dim {}, n_heads {}, n_kv_heads {}, vocab {}{} (plan "
                          "model {})",
                          p.model.layers, p.model.hidden, p.model.heads, p.model.kv_heads,
                          p.model.vocab, p.model.qk_norm ? ", per-head Q and K norms (the qwen3 flavors)" : "",
                          p.model.name));
  if (p.model.moe) {
    // The MoE shape is model code in TorchTitan (MoEArgs of the deepseek_v3 / llama4 / qwen3
    // flavors), like the dense shape.
    const auto& e = *p.model.moe;
    // Dense and MoE layers alternating: the llama4 flavors' interleave_moe_layer_step, layer_id
    // (0-based) MoE when (layer_id + 1) % step == 0 (torchtitan/models/llama4/model/model.py
    // TransformerBlock at v0.2.2 = 73a0e697), strata's moe.layer_step rule; their dense layers
    // are the flavor's FeedForward, whose width must be model.ffn.
    c.push_back(fmt::format("the flavor's MoE must match: {} experts of width {}, top_k {}, {} "
                            "shared expert(s) of width {}, score_func {}, the first {} layers "
                            "dense{}{}",
                            e.experts, e.expert_ffn, e.top_k, e.shared_experts,
                            e.shared_experts > 0 ? e.shared_expert_ffn : 0,
                            models::to_string(e.router), e.first_dense_layers,
                            e.layer_step > 1
                                ? fmt::format(", interleave_moe_layer_step {} (MoE on the layers numbered "
                                              "from 1 a multiple of it, the others a dense MLP of width {}; "
                                              "llama4 flavors)",
                                              e.layer_step, p.model.ffn)
                                : std::string(),
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
           "# tensor instead of the amax history).\n";
    out += stack.fp8_tp_all_gather
               ? "# Its TP all-gathers run in float8, as strata charges them on stack " + stack.name + ".\n"
               : "# Its TP all-gathers run in float8, less traffic than the bf16 gathers strata\n"
                 "# charges on stack " + stack.name + ".\n";
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
  if (opt.train_tokens > 0)
    out += fmt::format("steps = {}  # ceil({} tokens / (global_batch_size x seq_len))\n",
                       train_iterations(p, opt.train_tokens), opt.train_tokens);
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
  if (s.recompute == Recompute::Selective) {
    out += "selective_ac_option = \"op\"  # op-level selective recompute\n";
    // TorchTitan has no attention-core-only recompute: the plan's own selective mode
    // (planned on another stack) keeps more and re-runs less than what runs here.
    if (!s.recompute_modules.per_op)
      out += "# the plan's selective recompute re-runs the attention core (strata's mode), which TorchTitan\n"
             "# has no option for; \"op\" is its nearest and differs in memory and time: plan with\n"
             "# --stack torchtitan-2024 for a prediction of this setting\n";
  }
  return opt.launcher == Launcher::Torchrun ? out : torchtitan_slurm_script(p, out, opt);
}

}  // namespace strata::exports
