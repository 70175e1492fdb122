#include "planner/layout_request.h"

#include <climits>

#include <fmt/format.h>

#include "common/checked_math.h"
#include "common/errors.h"
#include "costmodel/recompute_modules.h"

namespace strata::planner {

namespace {

// dp: given, or what the GPU count leaves after tp, pp and cp, or 1.
int derive_dp(const LayoutRequest& r, std::int64_t tp_pp, std::vector<std::string>& defaults) {
  if (r.dp > 0) return r.dp;
  if (r.gpus == 0) {
    defaults.push_back("dp 1");
    return 1;
  }
  if (r.gpus % tp_pp != 0)
    input_error("--gpus ({}) must be divisible by tp x pp x cp = {} x {} x {} = {} to derive dp",
                r.gpus, r.tp, r.pp, r.cp, tp_pp);
  return static_cast<int>(r.gpus / tp_pp);
}

// Global batch: given, or the default rounded up to a multiple of micro-batch x dp.
std::int64_t derive_global_batch(const LayoutRequest& r, int dp, std::int64_t default_global_batch,
                                 std::vector<std::string>& defaults) {
  if (r.global_batch > 0) return r.global_batch;
  const std::int64_t batch =
      checked_round_up(default_global_batch, checked_mul(r.micro_batch, dp, "micro-batch x dp"), "global batch");
  defaults.push_back(fmt::format("global batch {}", batch));
  return batch;
}

// Schedule: given, or interleaved when each rank holds several virtual stages, else 1F1B.
ScheduleKind derive_schedule(const LayoutRequest& r) {
  if (!r.schedule.empty()) return schedule_from_string(r.schedule);
  return r.vpp > 1 ? ScheduleKind::Interleaved : ScheduleKind::OneFOneB;
}

}  // namespace

Strategy derive_strategy(const LayoutRequest& r, std::int64_t default_global_batch, const std::string& precision,
                         std::vector<std::string>& defaults) {
  const std::int64_t tp_pp = checked_mul(checked_mul(r.tp, r.pp, "tp x pp"), r.cp, "tp x pp x cp");
  const int dp = derive_dp(r, tp_pp, defaults);
  const std::int64_t world = checked_mul(tp_pp, dp, "dp x tp x pp x cp");
  if (r.gpus > 0 && world != r.gpus)
    input_error("--gpus ({}) must equal dp x tp x pp x cp = {} x {} x {} x {} = {}", r.gpus, dp,
                r.tp, r.pp, r.cp, world);
  if (world > INT_MAX) input_error("dp x tp x pp x cp ({}) exceeds {} GPUs", world, INT_MAX);

  const std::int64_t global_batch = derive_global_batch(r, dp, default_global_batch, defaults);
  return {.dp = dp, .tp = r.tp, .pp = r.pp, .cp = r.cp, .vpp = r.vpp, .micro_batch = r.micro_batch,
          .global_batch = global_batch, .zero = r.zero, .recompute = recompute_from_string(r.recompute),
          .recompute_modules = costmodel::recompute_modules_from_names(r.recompute_modules),
          .recompute_layers = r.recompute_layers,
          .sequence_parallel = r.sequence_parallel, .schedule = derive_schedule(r), .ep = r.ep, .etp = r.etp,
          .ep_overlap = r.ep_overlap, .delay_wgrad = r.delay_wgrad, .precision = precision};
}

}  // namespace strata::planner
