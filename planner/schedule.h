// Pipeline schedules as data: one generator of per-stage step lists for GPipe, 1F1B
// and interleaved 1F1B. The simulator times these lists; the runtime's pipeline
// executor walks the same lists, so prediction and execution cannot drift.
#pragma once
#include <vector>

#include "planner/strategy.h"

namespace strata::planner {

enum class StepKind { Forward, Backward, SendActivation, RecvActivation, SendGrad, RecvGrad };

struct ScheduleStep {
  StepKind kind = StepKind::Forward;
  int microbatch = 0;
  int chunk = 0;       // model chunk (virtual stage) on this rank, 0..vpp-1
  int peer_stage = -1; // for send/recv: the pipeline rank on the other end
  bool operator==(const ScheduleStep&) const = default;
};

// Steps of pipeline rank `stage` (0..pp-1) for `microbatches` micro-batches. Sends and
// receives appear where that rank would post them, paired across stages so a walker that
// executes them with blocking send/recv cannot deadlock.
// Interleaved requires microbatches % pp == 0 (Megatron's rule) and vpp > 1.
std::vector<ScheduleStep> build_schedule(ScheduleKind kind, int pp, int stage, int microbatches,
                                         int vpp = 1);

// Largest number of micro-batches whose activations are alive at once on `stage`
// (1F1B: min(pp - stage, m); GPipe: m). Used by the memory model.
int peak_in_flight(ScheduleKind kind, int pp, int stage, int microbatches, int vpp = 1);

const char* to_string(StepKind k);

}  // namespace strata::planner
