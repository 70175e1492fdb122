// Megatron-LM command line -> ImportedJob. Flag names and meanings: Megatron-LM main at
// d98e8a64 (export/frameworks/megatron_args.yaml lists every flag with its type).
#include "export/import_megatron.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "common/checked_math.h"
#include "common/errors.h"
#include "export/export_formats.h"
#include "export/launch_script.h"
#include "export/megatron_command_line.h"
#include "export/megatron_flags.h"
#include "export/megatron_layer_pattern.h"
#include "export/safe_text.h"
#include "planner/embedding_loss_split.h"
#include "planner/first_last_stages.h"
#include "planner/plan.h"

namespace strata::exports {

using costmodel::AttentionKernel;
using costmodel::DType;

namespace {

using Kind = MegatronFlagKind;

double to_float(const std::string& flag, const std::string& v, const std::string& source) {
  try {
    std::size_t used = 0;
    const double d = std::stod(v, &used);
    if (used == v.size()) return d;
  } catch (const std::exception&) {
  }
  input_error("{}: {} '{}' is not a number", source, flag, one_line(v));
}

int to_int32(const std::string& flag, const std::string& v, const std::string& source) {
  const std::int64_t x = flag_positive_int(flag, v, source);
  if (x > (1 << 20)) input_error("{}: {} ({}) is larger than {}", source, flag, x, 1 << 20);
  return static_cast<int>(x);
}

// --pipeline-model-parallel-layout "E,t*3|t*4|...|t*3,L": embedding only first, loss only
// last, the model's MTP blocks (m or m*N) right before the loss (the layouts strata plans);
// anything else (empty stages, ...) is refused by name.
std::vector<std::vector<int>> groups_from_layout(const std::string& layout, std::int64_t layers,
                                                 std::int64_t mtp_layers, const std::string& source) {
  std::vector<std::int64_t> blocks;
  std::size_t start = 0;
  bool mtp_seen = false;
  const auto bad = [&](const std::string& why) {
    input_error("{}: --pipeline-model-parallel-layout '{}': {}", source, one_line(layout), why);
  };
  std::vector<std::string> stages;
  while (true) {
    const std::size_t bar = layout.find('|', start);
    stages.push_back(layout.substr(start, bar == std::string::npos ? bar : bar - start));
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  for (std::size_t v = 0; v < stages.size(); ++v) {
    std::int64_t count = 0;
    std::size_t s = 0;
    const std::string& st = stages[v];
    while (s <= st.size()) {
      const std::size_t comma = st.find(',', s);
      std::string part = st.substr(s, comma == std::string::npos ? comma : comma - s);
      part.erase(std::remove(part.begin(), part.end(), ' '), part.end());
      if (part == "E") {
        if (v != 0 || s != 0) bad("strata places the embedding (E) first on the first stage");
      } else if (part == "L") {
        if (v + 1 != stages.size() || comma != std::string::npos)
          bad("strata places the loss (L) last on the last stage");
      } else if (part == "m" || part.rfind("m*", 0) == 0) {
        // MTP blocks: with the loss, right before it (where strata and Megatron put them).
        const std::int64_t n =
            part == "m" ? 1 : flag_positive_int("--pipeline-model-parallel-layout", part.substr(2), source);
        std::string rest = comma == std::string::npos ? "" : st.substr(comma + 1);
        rest.erase(std::remove(rest.begin(), rest.end(), ' '), rest.end());
        if (v + 1 != stages.size() || rest != "L")
          bad("strata places the multi-token-prediction blocks (m) right before the loss (L)");
        if (n != mtp_layers)
          bad(fmt::format("it holds {} MTP block(s) (m), --mtp-num-layers is {}", n, mtp_layers));
        mtp_seen = true;
      } else if (part == "t") {
        count += 1;
        if (count > layers) bad(fmt::format("it holds more layers than --num-layers ({})", layers));
      } else if (part.rfind("t*", 0) == 0) {
        const std::int64_t n = flag_positive_int("--pipeline-model-parallel-layout", part.substr(2), source);
        if (n > layers) bad(fmt::format("t*{} holds more layers than --num-layers ({})", n, layers));
        count += n;
      } else {
        bad(fmt::format("'{}' is not E, L, t, t*N, m or m*N (strata models decoder and MTP "
                        "blocks only)",
                        one_line(part)));
      }
      if (comma == std::string::npos) break;
      s = comma + 1;
    }
    if (count == 0) bad(fmt::format("virtual stage {} holds no decoder layer", v));
    blocks.push_back(count);
  }
  if (stages.front().rfind("E", 0) != 0) bad("the first stage must start with E");
  if (stages.back().size() < 1 || stages.back().back() != 'L') bad("the last stage must end with L");
  std::int64_t total = 0;
  for (auto b : blocks) total += b;
  if (total != layers) bad(fmt::format("it holds {} decoder layers, --num-layers is {}", total, layers));
  if (mtp_layers > 0 && !mtp_seen)
    bad(fmt::format("--mtp-num-layers {} needs as many MTP blocks (m) before the loss (L)", mtp_layers));
  return planner::stage_layers_from_blocks(blocks, layers);
}

// The modelled flags of one command line read into the job, one step per part of it (the
// steps run in import_megatron_args' order, so the first error found is the same).
class MegatronArgsReader {
 public:
  MegatronArgsReader(const std::map<std::string, std::string>& v, const std::string& source,
                     ImportedJob& job)
      : v(v), source(source), job(job) {}

  void check_unmodelled_values() const;
  void read_model_shape();
  std::int64_t read_vocabulary() const;
  void read_precision_and_overlaps();
  void read_parallel_layout();
  void read_stage_map();
  void read_recompute();

 private:
  void read_attention_kind(models::ModelSpec& m);
  void read_moe(models::ModelSpec& m);
  bool has(const char* f) const { return v.count(f) > 0; }
  std::int64_t get_int(const char* f) const { return flag_positive_int(f, v.at(f), source); }
  std::int64_t need(const char* f) const {
    if (!has(f)) input_error("{}: {} is missing (strata needs it to build the model)", source, f);
    return get_int(f);
  }

  const std::map<std::string, std::string>& v;
  const std::string& source;
  ImportedJob& job;
};

// --multi-latent-attention and its head widths (Megatron-LM's argparse defaults where a
// width is not given, as Megatron builds it), --kv-channels, --qk-layernorm (per-head Q and K
// norms, or MLA's latent norms); --rope-type only where strata's model has what it means.
void MegatronArgsReader::read_attention_kind(models::ModelSpec& m) {
  const auto get = [&](const char* f, std::int64_t dflt) {
    return has(f) ? flag_positive_int(f, v.at(f), source) : dflt;
  };
  if (has("--rope-type") && v.at("--rope-type") != "rope")
    input_error("{}: --rope-type '{}' is not modelled (strata's positions are plain RoPE: "
                "--rope-type rope)", source, one_line(v.at("--rope-type")));
  if (!has("--multi-latent-attention")) {
    for (const char* f : {"--q-lora-rank", "--kv-lora-rank", "--qk-head-dim",
                          "--qk-pos-emb-head-dim", "--v-head-dim"})
      if (has(f)) input_error("{}: {} needs --multi-latent-attention", source, f);
    // Per-head norms on Q and K (gpt_layer_specs.py: q_layernorm / k_layernorm = TENorm, the
    // model's --normalization over kv_channels, when qk_layernorm).
    m.qk_norm = has("--qk-layernorm");
    if (has("--kv-channels")) m.explicit_head_dim = get("--kv-channels", 0);
    return;
  }
  // Megatron-LM's multi-latent attention: argparse defaults at d98e8a64 are q-lora-rank None
  // (no query compression), kv-lora-rank 32, qk-head-dim 128, qk-pos-emb-head-dim 64,
  // v-head-dim 128; --kv-channels is not read by it.
  models::MlaSpec a;
  a.q_lora_rank = get("--q-lora-rank", 0);
  a.kv_lora_rank = get("--kv-lora-rank", 32);
  a.qk_nope_head_dim = get("--qk-head-dim", 128);
  a.qk_rope_head_dim = get("--qk-pos-emb-head-dim", 64);
  a.v_head_dim = get("--v-head-dim", 128);
  m.mla = a;
  if (m.positions != models::Positions::Rope)
    input_error("{}: --multi-latent-attention needs --position-embedding-type rope (strata's "
                "multi-latent attention is rotary)", source);
  if (has("--kv-channels")) job.ignored.push_back("--kv-channels");
  // Without --qk-layernorm Megatron drops the latent RMSNorms: a few thousand weights per
  // layer that strata still counts.
}

// --num-experts and the MoE flags megatron_args writes.
void MegatronArgsReader::read_moe(models::ModelSpec& m) {
  if (!has("--num-experts")) {
    for (const char* f : {"--moe-router-topk", "--moe-ffn-hidden-size",
                          "--moe-shared-expert-intermediate-size", "--moe-layer-freq",
                          "--moe-router-score-function", "--moe-expert-capacity-factor",
                          "--moe-pad-expert-input-to-capacity", "--moe-router-pre-softmax",
                          "--moe-grouped-gemm", "--moe-token-dispatcher-type", "--moe-flex-dispatcher-backend",
                          "--moe-router-num-groups",
                          "--moe-router-group-topk"})
      if (has(f)) input_error("{}: {} needs --num-experts", source, f);
    return;
  }
  models::MoeSpec e;
  e.experts = get_int("--num-experts");
  e.top_k = has("--moe-router-topk") ? get_int("--moe-router-topk") : 2;  // Megatron's default
  e.expert_ffn = has("--moe-ffn-hidden-size") ? get_int("--moe-ffn-hidden-size") : m.ffn;
  if (has("--moe-shared-expert-intermediate-size")) {
    // Megatron holds the shared experts as one MLP of their total width.
    e.shared_experts = 1;
    e.shared_expert_ffn = get_int("--moe-shared-expert-intermediate-size");
  }
  if (has("--moe-layer-freq")) {
    const MoeLayerLayout layout = moe_layout_from_moe_layer_freq(v.at("--moe-layer-freq"), m.layers, source);
    e.first_dense_layers = layout.first_dense_layers;
    e.layer_step = layout.layer_step;
  }
  const std::string score =
      has("--moe-router-score-function") ? v.at("--moe-router-score-function") : "softmax";
  if (score == "sigmoid") e.router = models::RouterKind::Sigmoid;
  else if (score != "softmax")
    input_error("{}: --moe-router-score-function '{}' is not modelled (softmax, sigmoid)", source,
                one_line(score));
  if (has("--moe-expert-capacity-factor")) {
    const double cf = to_float("--moe-expert-capacity-factor", v.at("--moe-expert-capacity-factor"), source);
    if (cf > 0) {
      // strata charges every expert padded to its capacity.
      if (!has("--moe-pad-expert-input-to-capacity"))
        input_error("{}: --moe-expert-capacity-factor without --moe-pad-expert-input-to-capacity is "
                    "not modelled: strata charges experts padded to their capacity", source);
      e.capacity_factor = cf;
    }  // a negative factor is dropless in Megatron-LM
  } else if (has("--moe-pad-expert-input-to-capacity")) {
    input_error("{}: --moe-pad-expert-input-to-capacity needs --moe-expert-capacity-factor "
                "(Megatron-LM raises otherwise)", source);
  }
  if (has("--moe-router-num-groups") != has("--moe-router-group-topk"))
    input_error("{}: --moe-router-num-groups and --moe-router-group-topk go together (group-limited "
                "routing)", source);
  if (has("--moe-router-num-groups")) {
    e.groups = get_int("--moe-router-num-groups");
    e.max_groups_per_token = get_int("--moe-router-group-topk");
  }
  if (e.top_k > e.experts)
    input_error("{}: --moe-router-topk ({}) exceeds --num-experts ({})", source, e.top_k, e.experts);
  m.moe = e;
}

// Values of modelled flags that strata cannot take other than at Megatron-LM's default.
void MegatronArgsReader::check_unmodelled_values() const {
  if (has("--transformer-impl") && v.at("--transformer-impl") != "transformer_engine" &&
      v.at("--transformer-impl") != "local")
    input_error("{}: --transformer-impl '{}' is not one of transformer_engine, local", source,
                one_line(v.at("--transformer-impl")));
  if (has("--make-vocab-size-divisible-by") && get_int("--make-vocab-size-divisible-by") != 128)
    input_error("{}: --make-vocab-size-divisible-by {} is not modelled (strata pads the "
                "vocabulary to a multiple of 128 x tp, Megatron-LM's default)",
                source, v.at("--make-vocab-size-divisible-by"));
  if (has("--rotary-percent") && to_float("--rotary-percent", v.at("--rotary-percent"), source) != 1.0)
    input_error("{}: --rotary-percent {} is not modelled (only 1.0)", source,
                one_line(v.at("--rotary-percent")));
}

// The vocabulary without its tokenizer files: --vocab-size where given, else what the
// tokenizer type fixes. Megatron-LM's build_tokenizer (megatron/core/tokenizers/utils/
// build_tokenizer.py at d98e8a64ddf34856e74b24714e3bedb2f5a39553; megatron/training/tokenizer/
// tokenizer.py at core_r0.8.0 baf94af3c667248865f23df73b9fb8e2395e6fd0): TikTokenizer takes
// --vocab-size or 2**17 = 131072 (tiktoken_tokenizer.py); core_r0.8.0's MistralTokenizer is
// 32768; GPT2BPETokenizer reads gpt2-vocab.json, whose 50257 tokens (Radford et al. 2019; the
// vocab_size of Hugging Face's gpt2 config) every Megatron-LM guide downloads, also named by
// the --vocab-file / --merge-file pair only that tokenizer reads. The rest read a file.
std::int64_t MegatronArgsReader::read_vocabulary() const {
  if (has("--vocab-size")) return get_int("--vocab-size");
  const auto ignored = [&](const char* flag) {
    return std::find(job.ignored.begin(), job.ignored.end(), flag) != job.ignored.end();
  };
  const std::string type = has("--tokenizer-type") ? v.at("--tokenizer-type") : "";
  if (type == "GPT2BPETokenizer" || (type.empty() && ignored("--vocab-file") && ignored("--merge-file")))
    return 50257;
  if (type == "TikTokenizer") return 131072;
  if (type == "MistralTokenizer") return 32768;
  if (type.empty())
    input_error("{}: --vocab-size is missing and no --tokenizer-type names the vocabulary; add --vocab-size "
                "<the tokenizer's vocabulary size>", source);
  input_error("{}: --tokenizer-type {} reads its vocabulary from a file strata does not open; add --vocab-size "
              "<the tokenizer's vocabulary size>", source, one_line(type));
}

void MegatronArgsReader::read_model_shape() {
  // Model shape.
  models::ModelSpec& m = job.model;
  const auto slash = source.find_last_of('/');
  m.name = "megatron:" + (slash == std::string::npos ? source : source.substr(slash + 1));
  m.layers = need("--num-layers");
  m.hidden = need("--hidden-size");
  m.heads = need("--num-attention-heads");
  m.ffn = has("--ffn-hidden-size") ? get_int("--ffn-hidden-size") : 4 * m.hidden;
  m.kv_heads = m.heads;
  if (has("--group-query-attention") && has("--multi-latent-attention"))
    input_error("{}: --group-query-attention and --multi-latent-attention exclude each other "
                "(Megatron-LM asserts it)", source);
  if (has("--group-query-attention")) m.kv_heads = need("--num-query-groups");
  else if (has("--num-query-groups"))
    input_error("{}: --num-query-groups needs --group-query-attention (Megatron-LM ignores it "
                "otherwise)", source);
  m.seq_len = need("--seq-length");
  if (has("--max-position-embeddings") && get_int("--max-position-embeddings") < m.seq_len)
    input_error("{}: --max-position-embeddings ({}) is smaller than --seq-length ({})", source,
                get_int("--max-position-embeddings"), m.seq_len);
  m.vocab = read_vocabulary();
  if (has("--swiglu")) m.activation = models::Activation::SwiGlu;
  if (has("--normalization")) {
    const std::string& n = v.at("--normalization");
    if (n == "RMSNorm") m.norm = models::Norm::RmsNorm;
    else if (n != "LayerNorm")
      input_error("{}: --normalization '{}' is not LayerNorm or RMSNorm", source, one_line(n));
  }
  m.positions = models::Positions::Learned;
  if (has("--position-embedding-type")) {
    const std::string& t = v.at("--position-embedding-type");
    if (t == "rope") m.positions = models::Positions::Rope;
    else if (t != "learned_absolute")
      input_error("{}: --position-embedding-type '{}' is not modelled (learned_absolute, rope)",
                  source, one_line(t));
  }
  // Megatron-LM's --rotary-base default is 10000 (the ModelSpec default).
  if (m.positions == models::Positions::Rope && has("--rotary-base")) {
    m.rope_base = to_float("--rotary-base", v.at("--rotary-base"), source);
    if (!(m.rope_base > 0))
      input_error("{}: --rotary-base {} must be > 0", source, one_line(v.at("--rotary-base")));
  }
  m.tied_embeddings = !has("--untie-embeddings-and-output-weights");
  // Multi-token prediction: Megatron-LM's --mtp-num-layers sequential MTP blocks.
  if (has("--mtp-num-layers")) {
    m.mtp_layers = get_int("--mtp-num-layers");
    if (m.mtp_layers < 0) input_error("{}: --mtp-num-layers ({}) must be >= 0", source, m.mtp_layers);
  }
  read_attention_kind(m);
  read_moe(m);
  // strata's models have biases exactly when they use GELU (models::has_bias).
  if (has("--disable-bias-linear") != (m.activation == models::Activation::SwiGlu))
    input_error("{}: {} is not modelled: strata's GELU models have linear biases and its SwiGLU "
                "models none (use --disable-bias-linear exactly with --swiglu)",
                source, has("--disable-bias-linear") ? "--disable-bias-linear without --swiglu"
                                                      : "--swiglu without --disable-bias-linear");
  models::validate(m, source);
  job.model_read = true;
}

void MegatronArgsReader::read_precision_and_overlaps() {
  if (has("--bf16") && has("--fp16")) input_error("{}: --bf16 and --fp16 both given", source);
  job.stack.precision = has("--bf16") ? DType::Bf16 : has("--fp16") ? DType::Fp16 : DType::Fp32;
  if (has("--fp8-recipe") && !has("--fp8-format"))
    input_error("{}: --fp8-recipe needs --fp8-format (Megatron-LM trains without FP8 otherwise)",
                source);
  if (has("--fp8-format")) {
    // strata's FP8 recipe (costmodel/fp8_linear.h): Transformer Engine delayed scaling (the
    // default --fp8-recipe at d98e8a64) on the block's linear layers, the rest in bf16. Both
    // formats run at the same FP8 tensor-core rate.
    const std::string& f = v.at("--fp8-format");
    if (f != "hybrid" && f != "e4m3")
      input_error("{}: --fp8-format '{}' is not hybrid or e4m3", source, one_line(f));
    const std::string recipe = has("--fp8-recipe") ? v.at("--fp8-recipe") : "delayed";
    if (recipe != "delayed")
      input_error("{}: --fp8-recipe '{}' is not modelled: strata charges Transformer Engine's "
                  "delayed scaling (--fp8-recipe delayed)", source, one_line(recipe));
    if (!has("--bf16"))
      input_error("{}: --fp8-format without --bf16 is not modelled: strata's FP8 recipe keeps "
                  "everything but the FP8 GEMMs in bf16", source);
    job.strategy.precision = "fp8";
  }
  if (has("--bf16") || has("--accumulate-allreduce-grads-in-fp32") || !has("--fp16"))
    job.stack.grad_reduce_dtype = DType::Fp32;
  else
    job.stack.grad_reduce_dtype = DType::Fp16;
  if (has("--attention-backend")) {
    const std::string& a = v.at("--attention-backend");
    if (a == "flash") job.stack.attention = AttentionKernel::Flash2;
    else if (a == "fused") job.stack.attention = AttentionKernel::Cudnn;
    else if (a == "unfused" || a == "local") job.stack.attention = AttentionKernel::Unfused;
    else if (a != "auto")
      input_error("{}: --attention-backend '{}' is not flash, fused, unfused, local or auto",
                  source, one_line(a));
  } else if (has("--use-flash-attn")) {
    job.stack.attention = AttentionKernel::Flash2;
  }
  for (const char* f : {"--attention-dropout", "--hidden-dropout"})
    if (has(f)) {
      const double d = to_float(f, v.at(f), source);
      if (!(d >= 0 && d < 1)) input_error("{}: {} ({}) must be in [0, 1)", source, f, one_line(v.at(f)));
    }
  if (has("--attention-dropout"))
    job.stack.attention_dropout = to_float("--attention-dropout", v.at("--attention-dropout"), source);
  job.stack.overlap_grad_reduce = has("--overlap-grad-reduce");
  job.stack.overlap_param_gather = has("--overlap-param-gather");
  job.stack.overlap_tp_comm = has("--tp-comm-overlap");
  job.stack.distributed_optimizer = has("--use-distributed-optimizer");
}

// Parallel degrees, rank order, ZeRO stage and batch sizes.
void MegatronArgsReader::read_parallel_layout() {
  const models::ModelSpec& m = job.model;
  planner::Strategy& s = job.strategy;
  s.dp = 0;
  s.tp = has("--tensor-model-parallel-size") ? to_int32("--tensor-model-parallel-size",
                                                        v.at("--tensor-model-parallel-size"), source)
                                             : 1;
  s.pp = has("--pipeline-model-parallel-size")
             ? to_int32("--pipeline-model-parallel-size", v.at("--pipeline-model-parallel-size"), source)
             : 1;
  s.cp = has("--context-parallel-size")
             ? to_int32("--context-parallel-size", v.at("--context-parallel-size"), source)
             : 1;
  if (has("--cp-comm-type")) {
    // One value for all layers (a per-layer list reaches here as extra words and is refused
    // by the parser); Megatron-Core's "a2a" and "a2a+p2p" are not modelled.
    const std::string& c = v.at("--cp-comm-type");
    if (c != "p2p" && c != "all_gather" && c != "allgather")
      input_error("{}: --cp-comm-type '{}' is not modelled (p2p, all_gather)", source,
                  one_line(c));
    job.stack.cp_comm = costmodel::cp_comm_type_from_string(c);
  }
  s.ep = has("--expert-model-parallel-size")
             ? to_int32("--expert-model-parallel-size", v.at("--expert-model-parallel-size"), source)
             : 1;
  // Megatron-LM's --expert-tensor-parallel-size defaults to the tensor-parallel size.
  s.etp = has("--expert-tensor-parallel-size")
              ? to_int32("--expert-tensor-parallel-size", v.at("--expert-tensor-parallel-size"), source)
              : s.tp;
  if (m.moe && models::has_bias(m) && s.etp > 1)
    input_error("{}: experts with linear biases (no --disable-bias-linear) need "
                "--expert-tensor-parallel-size 1 (Megatron-LM asserts it; the size defaults to "
                "tp {})", source, s.tp);
  if (!m.moe) {
    if (s.ep > 1)
      input_error("{}: --expert-model-parallel-size {} needs --num-experts (Megatron-LM asserts "
                  "it)", source, s.ep);
    s.etp = 1;  // no experts to split
  } else if (s.ep * s.etp > 1) {
    // The exchanges strata charges (costmodel/expert_dispatch_cost.h): the alltoall and
    // allgather dispatchers (allgather is Megatron-LM's default), or the flex dispatcher on
    // DeepEP's kernels (its backend's default at d98e8a64,
    // TransformerConfig.moe_flex_dispatcher_backend), sent once per node.
    const std::string dispatcher =
        has("--moe-token-dispatcher-type") ? v.at("--moe-token-dispatcher-type") : std::string("allgather");
    const std::string backend =
        has("--moe-flex-dispatcher-backend") ? v.at("--moe-flex-dispatcher-backend") : std::string("deepep");
    if (dispatcher == "flex" && backend != "deepep")
      input_error("{}: --moe-flex-dispatcher-backend '{}' is not modelled: strata charges DeepEP's "
                  "kernels for the flex dispatcher (add --moe-flex-dispatcher-backend deepep)",
                  source, one_line(backend));
    if (dispatcher != "alltoall" && dispatcher != "flex" && dispatcher != "allgather")
      input_error("{}: --moe-token-dispatcher-type '{}' is not modelled with expert parallelism: "
                  "strata charges the alltoall, allgather and flex (DeepEP) dispatchers",
                  source, one_line(dispatcher));
    job.stack.moe_dispatcher = dispatcher == "flex"        ? costmodel::MoeDispatcher::DeepEp
                               : dispatcher == "allgather" ? costmodel::MoeDispatcher::AllGather
                                                           : costmodel::MoeDispatcher::AllToAll;
  }
  if (has("--moe-flex-dispatcher-backend") &&
      (!has("--moe-token-dispatcher-type") || v.at("--moe-token-dispatcher-type") != "flex"))
    input_error("{}: --moe-flex-dispatcher-backend needs --moe-token-dispatcher-type flex", source);
  s.sequence_parallel = has("--sequence-parallel");
  if (s.sequence_parallel && s.tp == 1) s.sequence_parallel = false;  // Megatron-LM turns it off
  s.ep_overlap = has("--overlap-moe-expert-parallel-comm");  // checked with the strategy's rules
  s.delay_wgrad = has("--delay-wgrad-compute");
  if (has("--tp-comm-overlap") && !s.sequence_parallel)
    input_error("{}: --tp-comm-overlap needs --sequence-parallel and tp > 1 (Megatron-LM asserts it)",
                source);
  if (has("--overlap-param-gather") &&
      !(has("--use-distributed-optimizer") && has("--overlap-grad-reduce")))
    input_error("{}: --overlap-param-gather needs --use-distributed-optimizer and "
                "--overlap-grad-reduce (Megatron-LM asserts it)", source);
  s.rank_order = has("--use-tp-pp-dp-mapping") ? "tp-pp-dp" : "tp-dp-pp";
  s.zero = has("--use-distributed-optimizer") ? 1 : 0;
  // Megatron-FSDP: its sharding strategy is the ZeRO stage (default no_shard).
  if (has("--data-parallel-sharding-strategy") && !has("--use-megatron-fsdp"))
    input_error("{}: --data-parallel-sharding-strategy needs --use-megatron-fsdp", source);
  if (has("--use-megatron-fsdp")) {
    const std::string strategy = has("--data-parallel-sharding-strategy")
                                     ? v.at("--data-parallel-sharding-strategy")
                                     : "no_shard";
    const int z = zero_from_megatron_sharding_strategy(strategy);
    if (z < 0)
      input_error("{}: --data-parallel-sharding-strategy '{}' is not no_shard, optim, optim_grads "
                  "or optim_grads_params", source, one_line(strategy));
    if (z >= 2 && !has("--use-distributed-optimizer"))
      input_error("{}: --data-parallel-sharding-strategy {} needs --use-distributed-optimizer "
                  "(Megatron-FSDP's required flags)", source, strategy);
    s.zero = std::max(s.zero, z);
  }
  s.micro_batch = has("--micro-batch-size") ? get_int("--micro-batch-size") : 1;
  // Same bound as `strata simulate --micro-batch/--global-batch`.
  constexpr std::int64_t kMaxBatch = std::int64_t{1} << 40;
  for (const char* f : {"--micro-batch-size", "--global-batch-size"})
    if (has(f) && get_int(f) > kMaxBatch)
      input_error("{}: {} ({}) is larger than {}", source, f, get_int(f), kMaxBatch);
  s.global_batch = has("--global-batch-size") ? get_int("--global-batch-size") : 0;  // 0: micro x dp

}

// The layer -> virtual stage map: a layout string, uneven first/last stages, or even stages
// (with virtual stages); then the schedule.
void MegatronArgsReader::read_stage_map() {
  const models::ModelSpec& m = job.model;
  planner::Strategy& s = job.strategy;
  const int ways = has("--pipeline-model-parallel-layout") + has("--decoder-first-pipeline-num-layers") +
                   has("--decoder-last-pipeline-num-layers") +
                   (has("--num-layers-per-virtual-pipeline-stage") ||
                    has("--num-virtual-stages-per-pipeline-rank"));
  if (has("--pipeline-model-parallel-layout") && ways > 1)
    input_error("{}: --pipeline-model-parallel-layout cannot be combined with other stage-size "
                "flags", source);
  const planner::EmbeddingLossSplit counted{has("--account-for-embedding-in-pipeline-split"),
                                            has("--account-for-loss-in-pipeline-split")};
  const bool account_for = counted.embedding || counted.loss;
  if (account_for && (has("--pipeline-model-parallel-layout") || has("--decoder-first-pipeline-num-layers") ||
                      has("--decoder-last-pipeline-num-layers")))
    input_error("{}: --account-for-embedding/loss-in-pipeline-split cannot be combined with "
                "--decoder-first/last-pipeline-num-layers or --pipeline-model-parallel-layout (Megatron-LM's rule)",
                source);
  if (has("--num-layers-per-virtual-pipeline-stage") && has("--num-virtual-stages-per-pipeline-rank"))
    input_error("{}: give --num-layers-per-virtual-pipeline-stage or "
                "--num-virtual-stages-per-pipeline-rank, not both", source);
  s.vpp = 1;
  if (has("--pipeline-model-parallel-layout")) {
    job.stage_layers = groups_from_layout(v.at("--pipeline-model-parallel-layout"), m.layers,
                                          m.mtp_layers, source);
    if (job.stage_layers.size() % s.pp != 0)
      input_error("{}: --pipeline-model-parallel-layout has {} stages, not a multiple of pp {}",
                  source, job.stage_layers.size(), s.pp);
    s.vpp = static_cast<int>(job.stage_layers.size() / s.pp);
  } else if (has("--decoder-first-pipeline-num-layers") || has("--decoder-last-pipeline-num-layers")) {
    // Megatron-LM's uneven stages (planner/first_last_stages.h has the rules and the commit);
    // with virtual stages it takes them from --num-virtual-stages-per-pipeline-rank only.
    if (has("--num-layers-per-virtual-pipeline-stage"))
      input_error("{}: uneven first/last stages take their virtual stages from "
                  "--num-virtual-stages-per-pipeline-rank, not --num-layers-per-virtual-pipeline-stage "
                  "(Megatron-LM's rule)", source);
    if (has("--num-virtual-stages-per-pipeline-rank"))
      s.vpp = to_int32("--num-virtual-stages-per-pipeline-rank",
                       v.at("--num-virtual-stages-per-pipeline-rank"), source);
    planner::FirstLastStages fl;
    if (has("--decoder-first-pipeline-num-layers")) fl.first = get_int("--decoder-first-pipeline-num-layers");
    if (has("--decoder-last-pipeline-num-layers")) fl.last = get_int("--decoder-last-pipeline-num-layers");
    job.stage_layers = planner::stage_layers_from_blocks(
        planner::first_last_stage_blocks(m.layers, s.pp, s.vpp, fl, source), m.layers);
  } else if (account_for) {
    // The embedding and / or loss count as layers (planner/embedding_loss_split.h); vpp from
    // either virtual-stage flag, counted the same way (Megatron-LM arguments.py).
    const std::int64_t per_rank = (m.layers + counted.embedding + counted.loss) / std::max(1, s.pp);
    if (has("--num-layers-per-virtual-pipeline-stage")) {
      const std::int64_t per = get_int("--num-layers-per-virtual-pipeline-stage");
      if (per_rank % per != 0)
        input_error("{}: the {} layers per pipeline rank (the embedding and loss counted) are not a multiple "
                    "of --num-layers-per-virtual-pipeline-stage ({})",
                    source, per_rank, per);
      s.vpp = static_cast<int>(per_rank / per);
    } else if (has("--num-virtual-stages-per-pipeline-rank")) {
      s.vpp = to_int32("--num-virtual-stages-per-pipeline-rank", v.at("--num-virtual-stages-per-pipeline-rank"),
                       source);
    }
    job.stage_layers = planner::stage_layers_from_blocks(
        planner::embedding_loss_split_blocks(m.layers, s.pp, s.vpp, counted, source), m.layers);
  } else {
    if (has("--num-layers-per-virtual-pipeline-stage")) {
      const std::int64_t per = get_int("--num-layers-per-virtual-pipeline-stage");
      if (per > m.layers || m.layers % (per * s.pp) != 0)
        input_error("{}: --num-layers ({}) is not a multiple of pp ({}) x "
                    "--num-layers-per-virtual-pipeline-stage ({})", source, m.layers, s.pp, per);
      s.vpp = static_cast<int>(m.layers / (per * s.pp));
    } else if (has("--num-virtual-stages-per-pipeline-rank")) {
      s.vpp = to_int32("--num-virtual-stages-per-pipeline-rank",
                       v.at("--num-virtual-stages-per-pipeline-rank"), source);
    }
    const std::int64_t nv = std::int64_t{s.pp} * s.vpp;
    if (m.layers % nv != 0)
      input_error("{}: --num-layers ({}) must be divisible by pp x vpp = {} (Megatron-LM's even "
                  "split); use --decoder-first/last-pipeline-num-layers or a layout", source,
                  m.layers, nv);
    job.stage_layers = planner::stage_layers_from_blocks(std::vector<std::int64_t>(nv, m.layers / nv), m.layers);
  }
  if (s.vpp > 1 && s.pp < 2) input_error("{}: virtual pipeline stages need pp > 1", source);
  s.schedule = s.vpp > 1 ? planner::ScheduleKind::Interleaved : planner::ScheduleKind::OneFOneB;
}

void MegatronArgsReader::read_recompute() {
  planner::Strategy& s = job.strategy;
  const std::string gran = has("--recompute-granularity") ? v.at("--recompute-granularity")
                           : has("--recompute-activations") ? "selective" : "";
  if (has("--recompute-modules") && gran != "selective")
    input_error("{}: --recompute-modules needs --recompute-granularity selective", source);
  if (gran.empty()) {
    if (has("--recompute-method") || has("--recompute-num-layers"))
      input_error("{}: --recompute-method/--recompute-num-layers need --recompute-granularity full",
                  source);
    s.recompute = planner::Recompute::None;
  } else if (gran == "selective") {
    s.recompute = planner::Recompute::Selective;
    if (has("--recompute-modules")) {  // Megatron-Core's module names (costmodel/recompute_modules.h)
      std::vector<std::string> names;
      std::istringstream words(v.at("--recompute-modules"));
      for (std::string w; words >> w;) names.push_back(w);
      try {
        s.recompute_modules = costmodel::recompute_modules_from_names(names);
      } catch (const InputError& e) {
        input_error("{}: --recompute-modules: {}", source, e.what());
      }
    }
  } else if (gran == "full") {
    const std::string method = has("--recompute-method") ? v.at("--recompute-method") : "";
    const std::int64_t n = has("--recompute-num-layers") ? get_int("--recompute-num-layers") : 0;
    // Megatron-Core's block method checkpoints the first n layers of each model chunk one by one
    // and keeps the others (megatron/core/recompute.py at d98e8a64): strategy.recompute_layers n,
    // every layer once n covers every chunk (uniform 1). Uniform groups of n > 1 layers re-run
    // together, which strata does not model.
    std::int64_t chunk_blocks = job.model.layers;  // one chunk: every block
    if (!job.stage_layers.empty()) {
      const std::vector<std::int64_t> blocks = planner::blocks_per_stage(job.stage_layers, job.model);
      chunk_blocks = *std::max_element(blocks.begin(), blocks.end());
    }
    if (!(method == "uniform" && n == 1) && !(method == "block" && n >= 1))
      input_error("{}: full recompute is modelled for every layer re-run alone (--recompute-method uniform "
                  "--recompute-num-layers 1) or the first n of each model chunk (--recompute-method block "
                  "--recompute-num-layers n); got method '{}', num-layers {}", source, one_line(method), n);
    s.recompute = planner::Recompute::Full;
    if (method == "block" && n < chunk_blocks) s.recompute_layers = static_cast<int>(n);
  } else {
    input_error("{}: --recompute-granularity '{}' is not full or selective", source, one_line(gran));
  }
}

}  // namespace

std::vector<std::vector<int>> pipeline_layout_groups(const std::string& layout, std::int64_t layers,
                                                     std::int64_t mtp_layers, const std::string& source) {
  return groups_from_layout(layout, layers, mtp_layers, source);
}

namespace {
// The line of `text` where the flag an import error names first appears ("--rope-type ..."
// on line 3, or the array that holds it): errors say "job.sh:3: --rope-type ..." so the user
// finds what to change. 0 when the message names no flag or the text does not hold it.
std::size_t line_of_named_flag(const std::string& message, const std::string& source, const std::string& text) {
  const std::string prefix = source + ": ";
  if (message.rfind(prefix, 0) != 0) return 0;
  const std::size_t at = message.find("--", prefix.size());
  if (at == std::string::npos) return 0;
  std::size_t end = at + 2;
  while (end < message.size() && (std::isalnum(static_cast<unsigned char>(message[end])) || message[end] == '-' ||
                                  message[end] == '_'))
    ++end;
  const std::string flag = message.substr(at, end - at);
  if (flag.size() <= 2) return 0;
  std::size_t line = 1;
  for (std::size_t i = 0; i + flag.size() <= text.size(); ++i) {
    if (text[i] == '\n') ++line;
    const bool starts = i == 0 || !(std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '-');
    const std::size_t after = i + flag.size();
    const bool ends = after == text.size() || !(std::isalnum(static_cast<unsigned char>(text[after])) ||
                                                text[after] == '-' || text[after] == '_');
    if (starts && ends && text.compare(i, flag.size(), flag) == 0) return line;
  }
  return 0;
}

ImportedJob import_megatron_words(const std::string& text, const std::string& source) {
  const std::vector<std::string> words = shell_words(expand_launch_script(text, source), source);
  ImportedJob job;
  const std::size_t args = read_launcher(words, job, source);
  const std::map<std::string, std::string> v = read_flags(words, args, job, source);
  MegatronArgsReader r(v, source, job);
  r.check_unmodelled_values();
  r.read_model_shape();
  r.read_precision_and_overlaps();
  r.read_parallel_layout();
  r.read_stage_map();
  r.read_recompute();
  return job;
}
}  // namespace

ImportedJob import_megatron_args(const std::string& text, const std::string& source) {
  try {
    return import_megatron_words(text, source);
  } catch (const InputError& e) {
    const std::string message = e.what();
    const std::size_t line = line_of_named_flag(message, source, text);
    if (line == 0) throw;
    throw InputError(fmt::format("{}:{}: {}", source, line, message.substr(source.size() + 2)));
  }
}

}  // namespace strata::exports
