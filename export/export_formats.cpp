// Plan -> Megatron-LM / DeepSpeed / TorchTitan. Names come from each framework's own
// argument/config definitions:
//  - Megatron-LM: megatron/training/arguments.py (_add_network_size_args, _add_training_args,
//    _add_distributed_args) and docs.nvidia.com/megatron "Custom Pipeline Model Parallel
//    Layout" (--pipeline-model-parallel-layout).
//  - DeepSpeed: deepspeed.ai/docs/config-json (batch, bf16, zero_optimization,
//    activation_checkpointing), deepspeed/runtime/config.py get_pipeline_config ("pipeline"
//    section), deepspeed.ai/tutorials/autotp-training ("tensor_parallel": {"autotp_size"}).
//  - TorchTitan: torchtitan/config/job_config.py (Training, Parallelism, ActivationCheckpoint).
#include "export/export_formats.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/errors.h"

namespace strata::exports {

using planner::Plan;
using planner::Recompute;
using planner::ScheduleKind;

namespace {

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

std::int64_t num_microbatches(const Plan& p) { return p.strategy.num_microbatches(); }

// Shell argument lines: "--flag value \".
class ArgLines {
 public:
  void comment(const std::string& c) { comments_.push_back("# " + c); }
  void flag(const std::string& name) { args_.push_back(name); }
  void flag(const std::string& name, const std::string& value) {
    args_.push_back(name + " " + value);
  }
  void flag(const std::string& name, std::int64_t value) { flag(name, std::to_string(value)); }
  std::string str() const {
    std::string out;
    for (const auto& c : comments_) out += c + "\n";
    for (std::size_t i = 0; i < args_.size(); ++i)
      out += args_[i] + (i + 1 < args_.size() ? " \\\n" : "\n");
    return out;
  }

 private:
  std::vector<std::string> comments_, args_;
};

std::string header(const Plan& p, const char* what) {
  const auto& s = p.strategy;
  return fmt::format("{} from strata plan: model {} on cluster {}, {} GPUs = dp {} x tp {} x pp {}",
                     what, p.model.name, p.cluster, s.gpus(), s.dp, s.tp, s.pp);
}

std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

ExportTarget export_target_from_string(const std::string& s) {
  if (s == "megatron") return ExportTarget::Megatron;
  if (s == "deepspeed") return ExportTarget::DeepSpeed;
  if (s == "torchtitan") return ExportTarget::TorchTitan;
  input_error("--to '{}' is not one of: megatron, deepspeed, torchtitan", s);
}

const char* to_string(ExportTarget t) {
  switch (t) {
    case ExportTarget::Megatron: return "megatron";
    case ExportTarget::DeepSpeed: return "deepspeed";
    case ExportTarget::TorchTitan: return "torchtitan";
  }
  return "?";
}

std::vector<std::string> export_target_names() { return {"megatron", "deepspeed", "torchtitan"}; }

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

std::string export_megatron(const Plan& p) {
  const auto& s = p.strategy;
  const auto& m = p.model;
  const StageShape shape = stage_shape(p);
  ArgLines a;
  a.comment(header(p, "Megatron-LM (pretrain_gpt.py) arguments"));
  a.comment(fmt::format("data parallel size {} is implied: launch {} ranks (WORLD_SIZE / (tp {} x "
                        "pp {}))",
                        s.dp, s.gpus(), s.tp, s.pp));
  a.comment(fmt::format("{} micro-batches per iteration = global batch {} / (micro-batch {} x dp {})",
                        num_microbatches(p), s.global_batch, s.micro_batch, s.dp));
  if (s.schedule == ScheduleKind::GPipe && s.pp > 1)
    a.comment("note: Megatron-LM has no GPipe schedule; it runs 1F1B (same bubble, less "
              "activation memory than planned)");
  if (s.rank_order != "tp-dp-pp" && s.rank_order != "tp-pp-dp")
    a.comment(fmt::format("note: rank order {} has no Megatron-LM flag; Megatron-LM places ranks "
                          "tp-dp-pp (or tp-pp-dp with --use-tp-pp-dp-mapping)",
                          s.rank_order));
  a.comment(fmt::format("vocabulary {} (Megatron-LM pads it to a multiple of 128 x tp = {})",
                        m.vocab, planner::padded_vocab(m.vocab, s.tp)));

  // Model.
  a.flag("--num-layers", m.layers);
  a.flag("--hidden-size", m.hidden);
  a.flag("--ffn-hidden-size", m.ffn);
  a.flag("--num-attention-heads", m.heads);
  if (m.kv_heads != m.heads) {
    a.flag("--group-query-attention");
    a.flag("--num-query-groups", m.kv_heads);
  }
  a.flag("--seq-length", m.seq_len);
  a.flag("--max-position-embeddings", m.seq_len);
  if (m.positions == models::Positions::Rope) a.flag("--position-embedding-type", "rope");
  if (m.activation == models::Activation::SwiGlu) a.flag("--swiglu");
  if (m.norm == models::Norm::RmsNorm) a.flag("--normalization", "RMSNorm");
  if (!m.tied_embeddings) a.flag("--untie-embeddings-and-output-weights");

  // Parallelism.
  a.flag("--tensor-model-parallel-size", s.tp);
  a.flag("--pipeline-model-parallel-size", s.pp);
  if (s.sequence_parallel) a.flag("--sequence-parallel");
  if (s.rank_order == "tp-pp-dp") a.flag("--use-tp-pp-dp-mapping");
  if (s.pp > 1) {
    if (shape.even) {
      if (s.vpp > 1) a.flag("--num-layers-per-virtual-pipeline-stage", shape.blocks.front());
    } else {
      // Uneven: Megatron-LM's first/last-stage flags when only those differ (no virtual
      // stages; the middle stages split the rest evenly), else an explicit layout.
      bool first_last = s.vpp == 1;
      for (int st = 1; first_last && st + 1 < s.pp; ++st)
        first_last = shape.blocks[st] == shape.blocks[1];
      if (first_last) {
        a.flag("--decoder-first-pipeline-num-layers", shape.blocks.front());
        a.flag("--decoder-last-pipeline-num-layers", shape.blocks.back());
      } else {
        a.flag("--pipeline-model-parallel-layout", "\"" + megatron_layout(p) + "\"");
      }
    }
  }

  // Batch, recompute, optimizer, precision.
  a.flag("--micro-batch-size", s.micro_batch);
  a.flag("--global-batch-size", s.global_batch);
  if (s.recompute == Recompute::Selective) {
    a.flag("--recompute-granularity", "selective");
  } else if (s.recompute == Recompute::Full) {
    a.flag("--recompute-granularity", "full");
    a.flag("--recompute-method", "uniform");
    a.flag("--recompute-num-layers", 1);
  }
  if (s.zero == 1) a.flag("--use-distributed-optimizer");
  a.flag("--bf16");
  return a.str();
}

std::string export_deepspeed(const Plan& p) {
  using J = nlohmann::ordered_json;
  const auto& s = p.strategy;
  const StageShape shape = stage_shape(p);
  J j;
  // DeepSpeed: train_batch_size = micro-batch x gradient accumulation x data-parallel size.
  j["train_batch_size"] = s.global_batch;
  j["train_micro_batch_size_per_gpu"] = s.micro_batch;
  j["gradient_accumulation_steps"] = num_microbatches(p);
  j["bf16"] = J{{"enabled", true}};
  j["zero_optimization"] = J{{"stage", s.zero}};
  if (s.pp > 1) {
    j["pipeline"] = J{{"stages", s.pp},
                      {"activation_checkpoint_interval", s.recompute == Recompute::Full ? 1 : 0}};
  }
  if (s.tp > 1) j["tensor_parallel"] = J{{"autotp_size", s.tp}};
  if (s.recompute != Recompute::None) {
    j["activation_checkpointing"] = J{{"partition_activations", s.sequence_parallel},
                                      {"contiguous_memory_optimization", false},
                                      {"cpu_checkpointing", false}};
  }
  // What the config file cannot hold: PipelineModule arguments and caveats.
  J notes = J::array();
  notes.push_back(fmt::format("data parallel size {} follows from world size {} / (tp {} x pp {})",
                              s.dp, s.gpus(), s.tp, s.pp));
  if (s.pp > 1)
    notes.push_back("build the model as deepspeed.pipe.PipelineModule(num_stages=pipeline_module."
                    "num_stages, partition_method=pipeline_module.partition_method); its "
                    "TrainSchedule is 1F1B");
  if (s.schedule == ScheduleKind::Interleaved)
    notes.push_back(fmt::format("DeepSpeed's pipeline engine has no interleaved schedule: vpp {} "
                                "is dropped (expect a larger bubble than planned)",
                                s.vpp));
  if (s.schedule == ScheduleKind::GPipe)
    notes.push_back("DeepSpeed runs 1F1B instead of GPipe (same bubble, less activation memory)");
  if (s.recompute == Recompute::Selective)
    notes.push_back("DeepSpeed has no selective (attention-only) recompute: wrap the attention "
                    "core in deepspeed.checkpointing.checkpoint to match the plan");
  if (s.tp > 1)
    notes.push_back("tensor_parallel.autotp_size needs DeepSpeed >= 0.16.4 (AutoTP training); "
                    "with a Megatron-style model pass its mpu to deepspeed.initialize instead");
  if (s.sequence_parallel)
    notes.push_back("sequence parallelism is approximated by activation_checkpointing."
                    "partition_activations");
  if (s.pp > 1 && s.tp > 1)
    notes.push_back("AutoTP and the pipeline engine are not combined by DeepSpeed itself: use a "
                    "Megatron-DeepSpeed model for tp x pp");
  J stage_blocks = J::array();
  for (auto b : shape.blocks) stage_blocks.push_back(b);
  if (s.pp > 1 && !shape.even)
    notes.push_back("the plan's stages are uneven (transformer_blocks_per_stage); DeepSpeed's "
                    "'parameters' partition balances parameters instead, so pass explicit "
                    "stage boundaries to reproduce the plan exactly");
  // PipelineModule partition_method values documented by DeepSpeed: "parameters", "uniform",
  // "type:<regex>".
  J pipeline_module = {{"num_stages", s.pp},
                       {"partition_method", shape.even ? "uniform" : "parameters"},
                       {"transformer_blocks_per_stage", stage_blocks}};
  j["strata_plan"] = J{{"comment", header(p, "DeepSpeed config")},
                       {"model", p.model.name},
                       {"cluster", p.cluster},
                       {"dp", s.dp},
                       {"tp", s.tp},
                       {"pp", s.pp},
                       {"vpp", s.vpp},
                       {"schedule", planner::to_string(s.schedule)},
                       {"recompute", planner::to_string(s.recompute)},
                       {"sequence_parallel", s.sequence_parallel},
                       {"pipeline_module", pipeline_module},
                       {"notes", notes}};
  return j.dump(2) + "\n";
}

std::string export_torchtitan(const Plan& p) {
  const auto& s = p.strategy;
  const StageShape shape = stage_shape(p);
  const std::int64_t m = num_microbatches(p);
  std::string out;
  out += "# " + header(p, "TorchTitan job config") + "\n";
  out += "# Merge into your train_configs/*.toml; set [model] name/flavor to a flavor with\n";
  out += fmt::format("# n_layers {}, dim {}, n_heads {}, n_kv_heads {}, vocab {} (plan model {}).\n",
                     p.model.layers, p.model.hidden, p.model.heads, p.model.kv_heads,
                     p.model.vocab, p.model.name);

  // [training]: local_batch_size is the per-data-parallel-rank batch of one step. With
  // pipeline parallelism TorchTitan splits it into pipeline micro-batches; without, it is one
  // forward/backward and global_batch_size / (local x dp) gives the gradient accumulation.
  const std::int64_t local = s.pp > 1 ? s.micro_batch * m : s.micro_batch;
  out += "\n[training]\n";
  out += fmt::format("local_batch_size = {}\n", local);
  out += fmt::format("global_batch_size = {}\n", s.global_batch);
  out += fmt::format("seq_len = {}\n", p.model.seq_len);
  out += "mixed_precision_param = \"bfloat16\"\n";

  // [parallelism]: TorchTitan's DDP only runs without TP/PP ("DDP has not supported > 1D
  // parallelism"); otherwise data parallelism is FSDP.
  const bool ddp = s.zero == 0 && s.tp == 1 && s.pp == 1;
  out += "\n[parallelism]\n";
  if (!ddp && s.dp > 1)
    out += s.zero == 1
               ? "# TorchTitan has no ZeRO-1: FSDP also shards weights and gradients (ZeRO-3),\n"
                 "# using less memory and more data-parallel traffic than planned.\n"
               : "# TorchTitan's DDP cannot combine with TP/PP: data parallelism runs as FSDP,\n"
                 "# using less memory and more data-parallel traffic than planned.\n";
  out += fmt::format("data_parallel_replicate_degree = {}\n", ddp ? s.dp : 1);
  out += fmt::format("data_parallel_shard_degree = {}\n", ddp ? 1 : s.dp);
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
    // Split points: the first module of every virtual stage after the first (TorchTitan
    // module names: tok_embeddings, layers.<i> (0-based), norm, output).
    std::vector<std::string> points;
    for (std::size_t v = 1; v < p.stage_layers.size(); ++v) {
      const int g = p.stage_layers[v].front();
      points.push_back(g <= p.model.layers ? fmt::format("layers.{}", g - 1) : std::string("norm"));
    }
    out += "pipeline_parallel_split_points = [";
    for (std::size_t i = 0; i < points.size(); ++i) out += (i ? ", " : "") + toml_string(points[i]);
    out += "]\n";
    if (!shape.even) out += "# (uneven stages: the split points follow the plan's stage map)\n";
  }

  out += "\n[activation_checkpoint]\n";
  out += fmt::format("mode = {}\n", toml_string(planner::to_string(s.recompute)));
  if (s.recompute == Recompute::Selective)
    out += "selective_ac_option = \"op\"  # op-level selective recompute\n";
  return out;
}

std::string export_plan(const Plan& p, ExportTarget t) {
  // Exports write dense-model flags; an MoE / MLA / explicit-head_dim model would come
  // out as a different, dense model, so it is refused by name.
  const auto& m = p.model;
  if (m.moe || m.mla || m.explicit_head_dim != 0)
    input_error("export {}: model '{}' uses {}, which the exports do not write yet",
                to_string(t), m.name,
                m.moe ? "mixture of experts (model.moe)" : m.mla ? "multi-head latent attention (model.mla)"
                                                           : "an explicit model.head_dim");
  switch (t) {
    case ExportTarget::Megatron: return export_megatron(p);
    case ExportTarget::DeepSpeed: return export_deepspeed(p);
    case ExportTarget::TorchTitan: return export_torchtitan(p);
  }
  STRATA_CHECK(false, "unknown export target");
  return {};
}

}  // namespace strata::exports
