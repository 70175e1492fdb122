// Strategy validation: every structural rule a layout must satisfy for a model, each
// reported as a Violation naming the field, its value and the rule (never the first only).
//
// Decisions (documented here and in the rules below):
// - sequence_parallel with tp == 1 is rejected (Megatron-LM silently turns it off; we say so
//   instead of planning a flag that does nothing).
// - vocab need not be divisible by tp: Megatron-LM pads the vocabulary to a multiple of
//   128 * tp (--make-vocab-size-divisible-by); padded_vocab() gives the padded size that the
//   vocab-parallel embedding and the cost model should use.
// - zero is 0..3 (1 = distributed optimizer, 2 = + sharded gradients, 3 = + sharded
//   parameters, FSDP).
// - vpp > 1 if and only if the schedule is interleaved; interleaved needs pp > 1 and
//   num_microbatches % pp == 0 (Megatron-LM's rule).
#include "planner/strategy.h"
#include "planner/detail/expert_parallel.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "common/enum_names.h"
#include "common/errors.h"
#include "common/rank_order.h"

namespace strata::planner {

namespace {

// Megatron-LM's default padding multiple (--make-vocab-size-divisible-by 128).
constexpr std::int64_t kVocabPadMultiple = 128;

}  // namespace

bool valid_rank_order(const std::string& order) { return parse_rank_order(order).has_value(); }

std::int64_t padded_vocab(std::int64_t vocab, int tp) {
  if (vocab <= 0 || tp <= 0) return vocab;
  const std::int64_t mult = kVocabPadMultiple * tp;
  return (vocab + mult - 1) / mult * mult;
}

std::vector<Violation> validate(const Strategy& s, const models::ModelSpec& m, StageSplit split) {
  std::vector<Violation> out;
  auto add = [&](std::string field, std::string msg) {
    out.push_back(Violation{std::move(field), std::move(msg)});
  };

  // Sizes.
  const bool dp_ok = s.dp >= 1, tp_ok = s.tp >= 1, pp_ok = s.pp >= 1, vpp_ok = s.vpp >= 1;
  if (s.cp < 1) add("strategy.cp", fmt::format("strategy.cp ({}) must be >= 1", s.cp));
  // Context parallel cuts each sequence into 2 x cp chunks (rank r keeps chunks r and
  // 2cp-1-r, which balances the causal work): the sequence must split evenly.
  if (s.cp > 1 && m.seq_len > 0 && m.seq_len % (2 * static_cast<std::int64_t>(s.cp)) != 0)
    add("strategy.cp",
        fmt::format("strategy.cp ({}) needs 2 x cp = {} to divide model.seq_len ({}) (load-balanced "
                    "causal chunks)",
                    s.cp, 2 * static_cast<std::int64_t>(s.cp), m.seq_len));
  if (s.cp > 1 && s.sequence_parallel && m.seq_len > 0 &&
      m.seq_len % (2 * static_cast<std::int64_t>(s.cp) * s.tp) != 0)
    add("strategy.sequence_parallel",
        fmt::format("strategy.sequence_parallel with cp needs 2 x cp x tp = {} to divide "
                    "model.seq_len ({})",
                    2 * static_cast<std::int64_t>(s.cp) * s.tp, m.seq_len));
  if (s.recompute_layers < 0)
    add("strategy.recompute_layers", fmt::format("strategy.recompute_layers ({}) must be >= 0", s.recompute_layers));
  if (s.recompute_layers > 0 && s.recompute != Recompute::Full)
    add("strategy.recompute_layers", "strategy.recompute_layers needs strategy.recompute full");
  if (s.recompute_modules.any()) {
    if (s.recompute != Recompute::Selective)
      add("strategy.recompute_modules", "strategy.recompute_modules needs strategy.recompute selective");
    if (s.recompute_modules.mla_up_proj && !m.mla)
      add("strategy.recompute_modules", "recompute module mla_up_proj needs a model with mla attention");
    if ((s.recompute_modules.moe || s.recompute_modules.moe_act || s.recompute_modules.shared_experts) && !m.moe)
      add("strategy.recompute_modules", "recompute modules moe, moe_act and shared_experts need a mixture-of-experts model");
    if (s.recompute_modules.per_op && s.recompute_modules.megatron())
      add("strategy.recompute_modules", "recompute module per_op (TorchTitan's per-op policy) stands alone: it cannot be combined with Megatron-Core modules");
    if (s.recompute_modules.per_op && (m.moe || m.mla))
      add("strategy.recompute_modules", "recompute module per_op (TorchTitan's per-op policy) is modelled for dense blocks without MLA only");
  }
  if (s.ep_overlap) {
    // Megatron-Core TransformerConfig.__post_init__ (d98e8a64): the batch-level EP overlap
    // needs expert parallelism, no full recompute and no recompute of the whole MoE module, a
    // virtual pipeline when pp > 1, and at most one MTP depth.
    if (!m.moe || s.ep < 2)
      add("strategy.ep_overlap", "strategy.ep_overlap needs a mixture-of-experts model with strategy.ep > 1");
    if (s.recompute == Recompute::Full)
      add("strategy.ep_overlap", "strategy.ep_overlap cannot run with strategy.recompute full (Megatron-Core refuses it)");
    if (s.recompute_modules.moe)
      add("strategy.ep_overlap", "strategy.ep_overlap cannot run with recompute module moe (Megatron-Core refuses it)");
    if (s.pp > 1 && s.vpp < 2)
      add("strategy.ep_overlap",
          fmt::format("strategy.ep_overlap with strategy.pp ({}) > 1 needs the interleaved schedule (strategy.vpp > 1)", s.pp));
    if (m.mtp_layers > 1)
      add("strategy.ep_overlap",
          fmt::format("strategy.ep_overlap supports at most one MTP depth; model.mtp_layers is {}", m.mtp_layers));
  }
  // TransformerConfig.__post_init__ (d98e8a64): "overlap_moe_expert_parallel_comm must be
  // enabled when enabling delay_wgrad_compute".
  if (s.delay_wgrad && !s.ep_overlap)
    add("strategy.delay_wgrad", "strategy.delay_wgrad needs strategy.ep_overlap (Megatron-Core delays the weight "
                                "gradients only for the batch-level EP overlap)");
  if (!dp_ok) add("strategy.dp", fmt::format("strategy.dp ({}) must be >= 1", s.dp));
  if (!tp_ok) add("strategy.tp", fmt::format("strategy.tp ({}) must be >= 1", s.tp));
  if (!pp_ok) add("strategy.pp", fmt::format("strategy.pp ({}) must be >= 1", s.pp));
  if (!vpp_ok) add("strategy.vpp", fmt::format("strategy.vpp ({}) must be >= 1", s.vpp));
  const bool mb_ok = s.micro_batch >= 1, gb_ok = s.global_batch >= 1;
  if (!mb_ok)
    add("strategy.micro_batch",
        fmt::format("strategy.micro_batch ({}) must be >= 1", s.micro_batch));
  if (!gb_ok)
    add("strategy.global_batch",
        fmt::format("strategy.global_batch ({}) must be >= 1", s.global_batch));
  if (s.zero < 0 || s.zero > 3)
    add("strategy.zero",
        fmt::format("strategy.zero ({}) must be 0, 1 (distributed optimizer), 2 (+ gradients) or 3 "
                    "(+ parameters)",
                    s.zero));
  if (!s.precision.empty() && s.precision != "bf16" && s.precision != "fp16" && s.precision != "fp8")
    add("strategy.precision",
        fmt::format("strategy.precision ('{}') must be bf16, fp16 or fp8 (or absent: the "
                    "software stack's precision)",
                    s.precision));
  if (!valid_rank_order(s.rank_order))
    add("strategy.rank_order",
        fmt::format("strategy.rank_order ('{}') must name tp, dp and pp once each (and "
                    "optionally cp), innermost first (e.g. tp-dp-pp or tp-cp-dp-pp)",
                    s.rank_order));

  // Tensor parallel divisibility.
  if (tp_ok) {
    if (m.heads > 0 && m.heads % s.tp != 0)
      add("strategy.tp", fmt::format("strategy.tp ({}) must divide model.heads ({})", s.tp, m.heads));
    if (m.kv_heads > 0 && m.kv_heads % s.tp != 0)
      add("strategy.tp",
          fmt::format("strategy.tp ({}) must divide model.kv_heads ({})", s.tp, m.kv_heads));
    if (m.hidden > 0 && m.hidden % s.tp != 0)
      add("strategy.tp",
          fmt::format("strategy.tp ({}) must divide model.hidden ({})", s.tp, m.hidden));
    if (m.ffn > 0 && m.has_dense_layers() && m.ffn % s.tp != 0)
      add("strategy.tp", fmt::format("strategy.tp ({}) must divide model.ffn ({})", s.tp, m.ffn));
    if (s.sequence_parallel && s.tp == 1)
      add("strategy.sequence_parallel",
          "strategy.sequence_parallel (true) requires strategy.tp > 1 (it shards activations "
          "over the tensor-parallel group)");
    if (s.sequence_parallel && m.seq_len > 0 && m.seq_len % s.tp != 0)
      add("strategy.sequence_parallel",
          fmt::format("strategy.sequence_parallel needs strategy.tp ({}) to divide "
                      "model.seq_len ({})",
                      s.tp, m.seq_len));
  }

  // Batch: global = micro_batch * dp * num_microbatches.
  if (mb_ok && gb_ok && dp_ok) {
    __int128 per_step = static_cast<__int128>(s.micro_batch) * s.dp;
    if (per_step > s.global_batch || s.global_batch % static_cast<std::int64_t>(per_step) != 0)
      add("strategy.global_batch",
          fmt::format("strategy.global_batch ({}) must be divisible by strategy.micro_batch ({}) "
                      "x strategy.dp ({})",
                      s.global_batch, s.micro_batch, s.dp));
  }

  // Pipeline.
  // A virtual stage holds at least one block; a given split may also give the embedding and
  // the loss stages of their own (StageSplit).
  if (pp_ok && vpp_ok && m.layers > 0) {
    const __int128 stages = static_cast<__int128>(s.pp) * s.vpp;
    if (split == StageSplit::Given && stages > m.layers + 2)
      add("strategy.pp",
          fmt::format("model.layers ({}) + 2 must be >= strategy.pp ({}) x strategy.vpp ({}) (every virtual "
                      "stage holds a block, or only the embedding or only the loss)",
                      m.layers, s.pp, s.vpp));
    if (split == StageSplit::Strata && stages > m.layers)
      add("strategy.pp",
          fmt::format("model.layers ({}) must be >= strategy.pp ({}) x strategy.vpp ({}){}", m.layers, s.pp, s.vpp,
                      stages <= m.layers + 2
                          ? " (more stages than blocks run only with the embedding and / or the loss on stages of "
                            "their own, which strata does not choose itself: a plan's stage_layers, a runs row's "
                            "pipeline_split, or an imported job's --account-for-embedding/loss-in-pipeline-split)"
                          : ""));
  }
  const bool interleaved = s.schedule == ScheduleKind::Interleaved;
  if (vpp_ok && s.vpp > 1 && !interleaved)
    add("strategy.vpp",
        fmt::format("strategy.vpp ({}) > 1 requires strategy.schedule interleaved (got {})", s.vpp,
                    to_string(s.schedule)));
  if (interleaved) {
    if (vpp_ok && s.vpp == 1)
      add("strategy.vpp", "strategy.schedule interleaved requires strategy.vpp > 1 (got 1)");
    if (pp_ok && s.pp == 1)
      add("strategy.pp", "strategy.schedule interleaved requires strategy.pp > 1 (got 1)");
    if (pp_ok && mb_ok && gb_ok && dp_ok && s.pp > 1) {
      std::int64_t per_step = s.micro_batch * s.dp;
      if (per_step > 0 && s.global_batch % per_step == 0) {
        std::int64_t nmb = s.global_batch / per_step;
        if (nmb % s.pp != 0)
          add("strategy.schedule",
              fmt::format("strategy.schedule interleaved needs the number of micro-batches ({} = "
                          "global_batch / (micro_batch x dp)) to be a multiple of strategy.pp ({})",
                          nmb, s.pp));
      }
    }
  }
  add_expert_violations(s, m, out);
  return out;
}

void require_valid(const Strategy& s, const models::ModelSpec& m, StageSplit split) {
  auto v = validate(s, m, split);
  if (v.empty()) return;
  std::string msg;
  for (const auto& x : v) msg += (msg.empty() ? "" : "; ") + x.message;
  throw InputError(msg);
}

constexpr EnumName<Recompute> kRecomputeNames[] = {
    {Recompute::None, "none"}, {Recompute::Selective, "selective"}, {Recompute::Full, "full"}};
constexpr EnumName<ScheduleKind> kScheduleKindNames[] = {
    {ScheduleKind::GPipe, "gpipe"}, {ScheduleKind::OneFOneB, "1f1b"}, {ScheduleKind::Interleaved, "interleaved"}};

const char* to_string(Recompute r) { return enum_name(r, kRecomputeNames); }

const char* to_string(ScheduleKind k) { return enum_name(k, kScheduleKindNames); }

Recompute recompute_from_string(const std::string& s) {
  if (const auto r = enum_from_name(s, kRecomputeNames)) return *r;
  input_error("recompute '{}' is not one of: {}", s, enum_names(kRecomputeNames));
}

ScheduleKind schedule_from_string(const std::string& s) {
  if (const auto k = enum_from_name(s, kScheduleKindNames)) return *k;
  input_error("schedule '{}' is not one of: {}", s, enum_names(kScheduleKindNames));
}

}  // namespace strata::planner
