// ImportedJob: a training job read from the configuration a user already runs (a Megatron-LM
// command line, a DeepSpeed config JSON), as strata's plan inputs: model shape, strategy,
// stage map and the stack settings the job turns on. `strata simulate --from` predicts it.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "planner/strategy.h"

namespace strata::exports {

// Stack settings a job's configuration states; unset ones keep the base stack's value.
struct StackOverrides {
  std::optional<costmodel::DType> precision;
  std::optional<costmodel::DType> grad_reduce_dtype;
  std::optional<costmodel::AttentionKernel> attention;
  std::optional<double> attention_dropout;
  std::optional<bool> overlap_grad_reduce;
  std::optional<bool> overlap_param_gather;
  std::optional<bool> overlap_tp_comm;
  std::optional<bool> distributed_optimizer;
  std::optional<costmodel::CpCommType> cp_comm;  // context-parallel K/V exchange
  std::optional<bool> zero_prefetch;             // ZeRO-3 gathers ahead of use
  std::optional<costmodel::Zero3Gather> zero3_gather;  // ZeRO-3 gathers per block or per module
  std::optional<double> zero3_persist_params;    // ZeRO-3 modules never gathered (at most this many)
  std::optional<double> zero3_gather_bucket_params;  // ZeRO-3 module gathers coalesced up to this
  std::optional<costmodel::MoeDispatcher> moe_dispatcher;  // --moe-token-dispatcher-type
  bool operator==(const StackOverrides&) const = default;
};

struct ImportedJob {
  models::ModelSpec model;
  bool model_read = false;        // the configuration held the model shape (Megatron-LM)
  planner::Strategy strategy;     // dp = 0 while the world size is unknown (cp, zero as read)
  int world_size = 0;             // from a torchrun prefix; 0 = not stated
  // Layer groups per virtual stage as the framework splits them (planner::Plan::stage_layers);
  // empty when the split is only known once dp is (filled by resolve_world_size).
  std::vector<std::vector<int>> stage_layers;
  StackOverrides stack;
  // Settings read that do not change the modelled job (paths, logging, learning rate, ...):
  // "--lr", "--data-path", ...; the CLI lists them.
  std::vector<std::string> ignored;
};

// The base stack with the job's stated settings applied.
costmodel::SoftwareStack apply_overrides(costmodel::SoftwareStack base, const StackOverrides& o);
// Fills strategy.dp from the world size (`world`, or the job's own when world = 0) and checks
// the batch arithmetic; InputError names what is missing or inconsistent.
void resolve_world_size(ImportedJob& job, int world, const std::string& source);

// What the command line adds to a job file (plan --from, simulate --from): whether --model
// was given, the parallelism a DeepSpeed config leaves to model code (tp, ep, etp), and the
// world size (0: the job's own).
struct JobCompletion {
  bool model_given = false;
  int tp = 1, ep = 1, etp = 1;
  int world = 0;
};
// The job in `text` as `from` ("megatron": a launch script or command line; "deepspeed": a
// config JSON) writes it, completed by `c` and with its world size resolved; InputError
// names a conflict (--model beside a Megatron-LM model shape) or what is missing.
ImportedJob read_job(const std::string& from, const std::string& text, const std::string& source,
                     const JobCompletion& c);

}  // namespace strata::exports
