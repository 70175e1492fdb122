// The flag tables of the Megatron-LM import (export/megatron_flags.h).
#include "export/megatron_flags.h"

#include <set>

namespace strata::exports {

namespace {
using Kind = MegatronFlagKind;
}  // namespace

const std::map<std::string, MegatronFlagKind>& megatron_modelled_flags() {
  static const std::map<std::string, MegatronFlagKind> m = {
      {"--num-layers", Kind::Int}, {"--hidden-size", Kind::Int}, {"--ffn-hidden-size", Kind::Int},
      {"--num-attention-heads", Kind::Int}, {"--group-query-attention", Kind::Flag},
      {"--num-query-groups", Kind::Int}, {"--seq-length", Kind::Int},
      {"--max-position-embeddings", Kind::Int}, {"--vocab-size", Kind::Int},
      {"--tokenizer-type", Kind::Str}, {"--position-embedding-type", Kind::Str},
      {"--swiglu", Kind::Flag}, {"--normalization", Kind::Str},
      {"--untie-embeddings-and-output-weights", Kind::Flag}, {"--disable-bias-linear", Kind::Flag},
      {"--attention-dropout", Kind::Float}, {"--hidden-dropout", Kind::Float},
      {"--bf16", Kind::Flag}, {"--fp16", Kind::Flag},
      {"--accumulate-allreduce-grads-in-fp32", Kind::Flag}, {"--attention-backend", Kind::Str},
      {"--use-flash-attn", Kind::Flag}, {"--tensor-model-parallel-size", Kind::Int},
      {"--pipeline-model-parallel-size", Kind::Int}, {"--sequence-parallel", Kind::Flag},
      {"--use-tp-pp-dp-mapping", Kind::Flag},
      {"--num-layers-per-virtual-pipeline-stage", Kind::Int},
      {"--num-virtual-stages-per-pipeline-rank", Kind::Int},
      {"--decoder-first-pipeline-num-layers", Kind::Int},
      {"--decoder-last-pipeline-num-layers", Kind::Int},
      {"--pipeline-model-parallel-layout", Kind::Str}, {"--micro-batch-size", Kind::Int},
      {"--account-for-embedding-in-pipeline-split", Kind::Flag},
      {"--account-for-loss-in-pipeline-split", Kind::Flag},
      {"--global-batch-size", Kind::Int}, {"--recompute-granularity", Kind::Str},
      {"--recompute-method", Kind::Str}, {"--recompute-num-layers", Kind::Int},
      {"--recompute-activations", Kind::Flag}, {"--recompute-modules", Kind::List},
      {"--overlap-moe-expert-parallel-comm", Kind::Flag}, {"--delay-wgrad-compute", Kind::Flag}, {"--use-distributed-optimizer", Kind::Flag},
      {"--overlap-grad-reduce", Kind::Flag}, {"--overlap-param-gather", Kind::Flag},
      {"--tp-comm-overlap", Kind::Flag}, {"--make-vocab-size-divisible-by", Kind::Int},
      {"--context-parallel-size", Kind::Int}, {"--cp-comm-type", Kind::Str},
      {"--use-megatron-fsdp", Kind::Flag}, {"--data-parallel-sharding-strategy", Kind::Str},
      {"--expert-model-parallel-size", Kind::Int}, {"--expert-tensor-parallel-size", Kind::Int},
      {"--num-experts", Kind::Int}, {"--moe-router-topk", Kind::Int},
      {"--moe-ffn-hidden-size", Kind::Int}, {"--moe-shared-expert-intermediate-size", Kind::Int},
      {"--moe-layer-freq", Kind::Str}, {"--moe-router-score-function", Kind::Str},
      {"--moe-expert-capacity-factor", Kind::Float},
      {"--moe-pad-expert-input-to-capacity", Kind::Flag},
      {"--moe-token-dispatcher-type", Kind::Str}, {"--moe-flex-dispatcher-backend", Kind::Str},
      {"--moe-grouped-gemm", Kind::Flag},
      {"--moe-router-pre-softmax", Kind::Flag}, {"--multi-latent-attention", Kind::Flag},
      {"--q-lora-rank", Kind::Int}, {"--kv-lora-rank", Kind::Int}, {"--qk-head-dim", Kind::Int},
      {"--qk-pos-emb-head-dim", Kind::Int}, {"--v-head-dim", Kind::Int},
      {"--qk-layernorm", Kind::Flag}, {"--rope-type", Kind::Str}, {"--kv-channels", Kind::Int},
      {"--fp8-format", Kind::Str}, {"--fp8-recipe", Kind::Str},
      {"--use-mcore-models", Kind::Flag}, {"--transformer-impl", Kind::Str},
      {"--rotary-base", Kind::Float}, {"--rotary-percent", Kind::Float},
      {"--norm-epsilon", Kind::Float},
      // Multi-token prediction (NVIDIA/Megatron-LM megatron/training/arguments.py,
      // _add_mtp_args: --mtp-num-layers int, default None; the loss weight does not change cost).
      {"--moe-router-num-groups", Kind::Int}, {"--moe-router-group-topk", Kind::Int},
      {"--mtp-num-layers", Kind::Int}, {"--mtp-loss-scaling-factor", Kind::Float}};
  return m;
}

bool megatron_operational_flag(const std::string& f) {
  static const std::set<std::string> exact = {
      "--data-path", "--data-cache-path", "--split", "--mock-data", "--train-iters",
      "--train-samples", "--lr", "--min-lr", "--lr-decay-style", "--lr-decay-iters",
      "--lr-decay-samples", "--lr-warmup-iters", "--lr-warmup-samples", "--lr-warmup-fraction",
      "--weight-decay", "--clip-grad", "--adam-beta1", "--adam-beta2", "--adam-eps",
      "--init-method-std", "--seed", "--save", "--load", "--save-interval", "--eval-interval",
      "--eval-iters", "--exit-interval", "--exit-duration-in-mins", "--tensorboard-dir",
      "--wandb-project", "--wandb-exp-name", "--wandb-save-dir", "--tokenizer-model",
      "--vocab-file", "--merge-file", "--distributed-backend", "--distributed-timeout-minutes",
      "--no-load-optim", "--no-load-rng", "--ckpt-format", "--use-checkpoint-args",
      "--num-workers", "--dataloader-type", "--no-mmap-bin-files", "--timing-log-level",
      "--timing-log-option", "--finetune", "--no-save-optim", "--no-save-rng",
      "--use-dist-ckpt", "--auto-detect-ckpt-format", "--dist-ckpt-format", "--async-save",
      "--manual-gc", "--manual-gc-interval", "--profile", "--profile-step-start",
      "--profile-step-end", "--use-pytorch-profiler", "--tensorboard-queue-size",
      "--rerun-mode", "--check-for-nan-in-loss-and-grad", "--no-check-for-nan-in-loss-and-grad",
      // Megatron-FSDP requires it; strata's compute model charges no gradient-accumulation
      // fusion either way.
      "--no-gradient-accumulation-fusion",
      // Router training hyper-parameters: the load-balancing loss or expert bias and its
      // rates steer which experts tokens pick, not the work of a step (strata's dropless
      // routing charges the moe.load_imbalance it is given).
      "--moe-aux-loss-coeff", "--moe-z-loss-coeff", "--moe-router-load-balancing-type",
      "--moe-router-enable-expert-bias", "--moe-router-bias-update-rate",
      "--moe-router-topk-scaling-factor", "--moe-router-dtype", "--moe-per-layer-logging",
      // The weight of the MTP loss in the total: no work of its own.
      "--mtp-loss-scaling-factor",
      // Batch ramp-up (list[list] and str in the argument table): only the first steps run a
      // smaller batch; the prediction is the steady step at --global-batch-size.
      "--rampup-batch-size", "--step-batch-size-schedule",
      // The attention kernel choice of recent Megatron-LM: the stack's attention kernel models it.
      "--attention-backend",
      // FP8 delayed-scaling hyper-parameters (amax history and margin).
      "--fp8-amax-history-len", "--fp8-amax-compute-algo", "--fp8-margin"};
  if (exact.count(f)) return true;
  return f.rfind("--log-", 0) == 0 || f.rfind("--no-log-", 0) == 0;
}

}  // namespace strata::exports
