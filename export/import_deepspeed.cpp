// DeepSpeed config JSON -> ImportedJob. Key names: DeepSpeed v0.19.5
// (export/frameworks/deepspeed_config.yaml).
#include "export/import_deepspeed.h"

#include <climits>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/checked_math.h"
#include "common/errors.h"
#include "export/safe_text.h"

namespace strata::exports {

namespace {

using nlohmann::json;

// A positive integer no larger than `max` (the bounds `strata simulate` puts on the same
// sizes: 2^40 for batches, 2^20 for tp and pp).
std::int64_t positive(const json& j, const std::string& key, const std::string& source,
                      std::int64_t max = std::int64_t{1} << 40) {
  if (!j.is_number_integer() || j.get<std::int64_t>() < 1 || j.get<std::int64_t>() > max)
    input_error("{}: {} must be an integer in [1, {}]", source, key, max);
  return j.get<std::int64_t>();
}

bool enabled(const json& section, const std::string& key, const std::string& source) {
  if (!section.is_object()) input_error("{}: {} must be an object", source, key);
  const auto it = section.find("enabled");
  if (it == section.end()) return false;
  if (!it->is_boolean()) input_error("{}: {}.enabled must be true or false", source, key);
  return it->get<bool>();
}

}  // namespace

ImportedJob import_deepspeed_config(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    input_error("{}: not valid JSON (byte {})", source, e.byte);
  }
  if (!j.is_object()) input_error("{}: a DeepSpeed config is a JSON object", source);

  // Keys that never change the modelled step.
  static const std::set<std::string> operational = {
      "steps_per_print", "wall_clock_breakdown", "optimizer", "scheduler", "gradient_clipping",
      "tensorboard", "wandb", "csv_monitor", "comet", "flops_profiler", "comms_logger",
      "checkpoint", "zero_allow_untested_optimizer", "dump_state", "memory_breakdown",
      "dataloader_drop_last", "prescale_gradients", "gradient_predivide_factor"};
  static const std::set<std::string> modelled = {
      "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "bf16",
      "bfloat16", "fp16", "data_types", "zero_optimization", "pipeline",
      "activation_checkpointing", "tensor_parallel"};
  ImportedJob job;
  std::vector<std::string> refused;
  for (const auto& [key, value] : j.items()) {
    if (operational.count(key)) job.ignored.push_back(key);
    else if (!modelled.count(key)) refused.push_back(one_line(key));
  }
  if (!refused.empty()) {
    std::string names;
    for (const auto& r : refused) names += (names.empty() ? "" : ", ") + r;
    input_error("{}: strata does not model {} (unknown to the import, or changing the job in a "
                "way strata cannot predict)", source, names);
  }

  planner::Strategy& s = job.strategy;
  const auto get = [&](const char* k) { return j.contains(k) ? positive(j[k], k, source) : 0; };
  const std::int64_t train = get("train_batch_size");
  const std::int64_t micro = get("train_micro_batch_size_per_gpu");
  const std::int64_t gas = get("gradient_accumulation_steps");
  if (train == 0 || micro == 0 || gas == 0)
    input_error("{}: train_batch_size, train_micro_batch_size_per_gpu and "
                "gradient_accumulation_steps are all needed to know the data-parallel size",
                source);
  const std::int64_t per_replica = checked_mul(micro, gas, "micro-batch x gradient_accumulation_steps");
  if (train % per_replica != 0)
    input_error("{}: train_batch_size {} is not micro-batch {} x gradient_accumulation_steps {} x "
                "dp for any whole dp", source, train, micro, gas);
  if (train / per_replica > INT_MAX)
    input_error("{}: data-parallel size {} exceeds {}", source, train / per_replica, INT_MAX);
  s.dp = static_cast<int>(train / per_replica);
  s.micro_batch = micro;
  s.global_batch = train;

  const bool bf16 = (j.contains("bf16") && enabled(j["bf16"], "bf16", source)) ||
                    (j.contains("bfloat16") && enabled(j["bfloat16"], "bfloat16", source));
  const bool fp16 = j.contains("fp16") && enabled(j["fp16"], "fp16", source);
  if (bf16 && fp16) input_error("{}: bf16 and fp16 are both enabled", source);
  job.stack.precision = bf16 ? costmodel::DType::Bf16 : fp16 ? costmodel::DType::Fp16
                                                             : costmodel::DType::Fp32;
  // DeepSpeed accumulates gradients in the training dtype unless data_types says otherwise.
  job.stack.grad_reduce_dtype = *job.stack.precision;
  if (j.contains("data_types")) {
    const json& d = j["data_types"];
    if (d.contains("grad_accum_dtype") && !d["grad_accum_dtype"].is_null()) {
      const std::string g = d["grad_accum_dtype"].is_string() ? d["grad_accum_dtype"].get<std::string>() : "";
      if (g == "fp32") job.stack.grad_reduce_dtype = costmodel::DType::Fp32;
      else if (g == "bf16") job.stack.grad_reduce_dtype = costmodel::DType::Bf16;
      else if (g == "fp16") job.stack.grad_reduce_dtype = costmodel::DType::Fp16;
      else input_error("{}: data_types.grad_accum_dtype must be fp32, bf16 or fp16", source);
    }
  }

  if (j.contains("zero_optimization")) {
    const json& z = j["zero_optimization"];
    if (!z.is_object()) input_error("{}: zero_optimization must be an object", source);
    const json stage = z.value("stage", json(0));
    if (!stage.is_number_integer() || stage.get<int>() < 0 || stage.get<int>() > 3)
      input_error("{}: zero_optimization.stage must be 0, 1, 2 or 3", source);
    s.zero = stage.get<int>();
    if (z.contains("overlap_comm") && z["overlap_comm"].is_boolean())
      job.stack.overlap_grad_reduce = z["overlap_comm"].get<bool>();
    // An element count of zero_optimization (DeepSpeed's default when unset).
    const auto elements = [&](const char* key, double dflt) {
      if (!z.contains(key)) return dflt;
      const json& n = z[key];
      if (!n.is_number() || n.get<double>() < 0 || n.get<double>() >= 1e12)
        input_error("{}: zero_optimization.{} must be a number in [0, 1e12)", source, key);
      return n.get<double>();
    };
    // Stage 3 prefetches parameters unless the prefetch bucket is 0 (strata's zero_prefetch),
    // coalescing the next modules' gathers up to the bucket, fetches each submodule from its
    // own hook, and keeps parameters at or below the persistence threshold whole.
    const double bucket = elements("stage3_prefetch_bucket_size", kDeepSpeedPrefetchBucketParams);
    const double persist = elements("stage3_param_persistence_threshold", kDeepSpeedPersistParams);
    if (s.zero == 3 && z.contains("stage3_prefetch_bucket_size")) job.stack.zero_prefetch = bucket > 0;
    if (s.zero == 3) {
      job.stack.zero3_gather = costmodel::Zero3Gather::Module;
      job.stack.zero3_persist_params = persist;
      job.stack.zero3_gather_bucket_params = bucket;
    }
  }
  job.stack.distributed_optimizer = s.zero == 1;

  s.pp = 1;
  if (j.contains("pipeline")) {
    const json& p = j["pipeline"];
    if (!p.is_object()) input_error("{}: pipeline must be an object", source);
    if (p.contains("stages") && !(p["stages"].is_string() && p["stages"] == "auto"))
      s.pp = static_cast<int>(positive(p["stages"], "pipeline.stages", source, 1 << 20));
    if (p.contains("activation_checkpoint_interval")) {
      const json& a = p["activation_checkpoint_interval"];
      if (!a.is_number_integer() || a.get<int>() < 0)
        input_error("{}: pipeline.activation_checkpoint_interval must be >= 0", source);
      if (a.get<int>() > 1)
        input_error("{}: pipeline.activation_checkpoint_interval {} is not modelled (0 or 1)",
                    source, a.get<int>());
      if (a.get<int>() == 1) s.recompute = planner::Recompute::Full;
    }
  }
  if (j.contains("tensor_parallel")) {
    const json& t = j["tensor_parallel"];
    if (t.is_object() && t.contains("autotp_size"))
      s.tp = static_cast<int>(positive(t["autotp_size"], "tensor_parallel.autotp_size", source, 1 << 20));
  }
  if (j.contains("activation_checkpointing") && s.recompute == planner::Recompute::None)
    s.recompute = planner::Recompute::Full;  // Megatron-DeepSpeed checkpoints whole layers
  s.schedule = planner::ScheduleKind::OneFOneB;  // DeepSpeed's TrainSchedule
  // deepspeed/runtime/pipe/engine.py asserts it (PipelineEngine.__init__).
  if (s.zero >= 2 && s.pp > 1)
    input_error("{}: zero_optimization.stage {} with pipeline.stages {}: DeepSpeed's pipeline "
                "engine refuses ZeRO-2/3 with pipeline parallelism", source, s.zero, s.pp);
  // dp came from the batch arithmetic, so the world size is dp x tp x pp.
  return job;
}

}  // namespace strata::exports
