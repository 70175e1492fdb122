#include "export/imported_job.h"

#include <fmt/format.h>

#include "common/checked_math.h"
#include "common/errors.h"
#include "export/import_deepspeed.h"
#include "export/import_megatron.h"

namespace strata::exports {

costmodel::SoftwareStack apply_overrides(costmodel::SoftwareStack s, const StackOverrides& o) {
  if (o.precision) s.precision = *o.precision;
  if (o.grad_reduce_dtype) s.grad_reduce_dtype = *o.grad_reduce_dtype;
  if (o.attention) s.attention = *o.attention;
  if (o.attention_dropout) s.attention_dropout = *o.attention_dropout;
  if (o.overlap_grad_reduce) s.overlap_grad_reduce = *o.overlap_grad_reduce;
  if (o.overlap_param_gather) s.overlap_param_gather = *o.overlap_param_gather;
  if (o.overlap_tp_comm) s.overlap_tp_comm = *o.overlap_tp_comm;
  if (o.distributed_optimizer) s.distributed_optimizer = *o.distributed_optimizer;
  if (o.cp_comm) s.cp_comm = *o.cp_comm;
  if (o.zero_prefetch) s.zero_prefetch = *o.zero_prefetch;
  if (o.zero3_gather) s.zero3_gather = *o.zero3_gather;
  if (o.zero3_persist_params) s.zero3_persist_params = *o.zero3_persist_params;
  if (o.zero3_gather_bucket_params) s.zero3_gather_bucket_params = *o.zero3_gather_bucket_params;
  if (o.moe_dispatcher) s.moe_dispatcher = *o.moe_dispatcher;
  return s;
}

void resolve_world_size(ImportedJob& job, int world, const std::string& source) {
  planner::Strategy& s = job.strategy;
  if (world != 0 && job.world_size != 0 && world != job.world_size)
    input_error("{}: --gpus {} disagrees with the launcher's world size {} (--nnodes x "
                "--nproc_per_node)", source, world, job.world_size);
  if (world == 0) world = job.world_size;
  if (s.dp == 0) {
    if (world == 0)
      input_error("{}: the world size is not stated (no torchrun --nnodes/--nproc_per_node): "
                  "pass --gpus", source);
    const std::int64_t tp_pp = std::int64_t{s.tp} * s.pp * s.cp;
    if (world % tp_pp != 0)
      input_error("{}: world size {} is not divisible by tp x pp x cp = {} x {} x {}", source,
                  world, s.tp, s.pp, s.cp);
    s.dp = static_cast<int>(world / tp_pp);
  } else if (world != 0 && world != s.gpus()) {
    input_error("{}: the configuration implies dp x tp x pp x cp = {} x {} x {} x {} = {} GPUs, "
                "not {}", source, s.dp, s.tp, s.pp, s.cp, s.gpus(), world);
  }
  const std::int64_t step = checked_mul(s.micro_batch, s.dp, "micro-batch x dp");
  if (s.global_batch == 0) s.global_batch = step;  // Megatron-LM's default
  if (s.global_batch % step != 0)
    input_error("{}: global batch {} is not a multiple of micro-batch {} x dp {}", source,
                s.global_batch, s.micro_batch, s.dp);
}

ImportedJob read_job(const std::string& from, const std::string& text, const std::string& source,
                     const JobCompletion& c) {
  ImportedJob job = from == "megatron" ? import_megatron_args(text, source) : import_deepspeed_config(text, source);
  if (job.model_read && c.model_given)
    input_error("--model conflicts with --from megatron: the command line sets the model shape");
  if (!job.model_read && !c.model_given)
    input_error("--from deepspeed needs --model (a DeepSpeed config holds no model shape)");
  if (from == "deepspeed") {  // model code there: the flags say it
    job.strategy.tp = c.tp;
    job.strategy.ep = c.ep;
    job.strategy.etp = c.etp;
  }
  resolve_world_size(job, c.world, source);
  return job;
}

}  // namespace strata::exports
