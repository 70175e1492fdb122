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

std::vector<Arg> megatron_args(const Plan& p, const SoftwareStack& stack) {
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
  if (m.kv_heads != m.heads) {
    flag("--group-query-attention");
    flag("--num-query-groups", num(m.kv_heads));
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
  if (stack.precision == DType::Bf16) flag("--bf16");
  if (stack.precision == DType::Fp16) flag("--fp16");
  if (stack.precision != DType::Bf16 && stack.grad_reduce_dtype == DType::Fp32)
    flag("--accumulate-allreduce-grads-in-fp32");  // bf16 turns it on by itself
  flag("--attention-backend", stack.attention == costmodel::AttentionKernel::Flash2   ? "flash"
                              : stack.attention == costmodel::AttentionKernel::Cudnn ? "fused"
                                                                                      : "unfused");

  // Parallel layout.
  flag("--tensor-model-parallel-size", num(std::int64_t{s.tp}));
  flag("--pipeline-model-parallel-size", num(std::int64_t{s.pp}));
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

std::string export_megatron(const Plan& p, const SoftwareStack& stack) {
  const auto& s = p.strategy;
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
  return comment_lines(c) + arg_lines(torchrun(s.gpus(), "pretrain_gpt.py"), megatron_args(p, stack));
}

// What DeepSpeed cannot run as planned, refused by name (both DeepSpeed exports).
void check_deepspeed_can_run(const Plan& p) {
  const auto& s = p.strategy;
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

std::string export_deepspeed(const Plan& p, const SoftwareStack& stack) {
  using J = nlohmann::ordered_json;
  const auto& s = p.strategy;
  check_deepspeed_can_run(p);
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

std::vector<Arg> megatron_deepspeed_args(const Plan& p, const SoftwareStack& stack) {
  const auto& s = p.strategy;
  const auto& m = p.model;
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
  flag("--deepspeed");
  flag("--deepspeed_config", "ds_config.json");
  flag("--zero-stage", num(std::int64_t{s.zero}));
  return a;
}

std::string export_megatron_deepspeed(const Plan& p, const SoftwareStack& stack) {
  const auto& s = p.strategy;
  check_deepspeed_can_run(p);
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

std::string export_torchtitan(const Plan& p, const SoftwareStack& stack) {
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
  std::string out = comment_lines(c);

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
  const bool ddp = s.zero == 0 && s.tp == 1 && s.pp == 1 && s.cp == 1;
  out += "\n[parallelism]\n";
  if (!ddp && s.zero != 3 && s.dp * s.cp > 1)
    out += s.zero == 0
               ? "# TorchTitan's DDP cannot combine with TP/PP/CP: data parallelism runs as FSDP\n"
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
  // Exports write dense-model flags; an MoE / MLA / explicit-head_dim model would come
  // out as a different, dense model, so it is refused by name.
  const auto& m = p.model;
  if (m.moe || m.mla || m.explicit_head_dim != 0)
    input_error("export {}: model '{}' uses {}, which the exports do not write yet",
                to_string(t), m.name,
                m.moe ? "mixture of experts (model.moe)" : m.mla ? "multi-head latent attention (model.mla)"
                                                           : "an explicit model.head_dim");
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
