// Pipeline schedules as data: one generator of per-stage step lists for GPipe, 1F1B
// and interleaved 1F1B. The simulator times these lists; the runtime's pipeline
// executor walks the same lists, so prediction and execution cannot drift.
#pragma once
#include <memory>
#include <vector>

#include "planner/strategy.h"

namespace strata::planner {

// Virtual stage numbering (Megatron's): chunk c of pipeline rank s is virtual stage
// v = c * pp + s; activations flow v -> v + 1, gradients v -> v - 1. Between the last and
// the first rank (s = pp-1 -> 0) an activation moves to the next chunk (c -> c + 1).
//
// Step meanings (all steps name the chunk *on this rank*):
//   Forward / Backward   compute micro-batch `microbatch` of `chunk`.
//   RecvActivation       before Forward(mb, chunk) when v > 0: the input of v from v - 1.
//   SendActivation       after Forward(mb, chunk) when v < pp*vpp - 1: the output of v to v + 1.
//   RecvGrad             before Backward(mb, chunk) when v < pp*vpp - 1: d(output of v) from v + 1.
//   SendGrad             after Backward(mb, chunk) when v > 0: d(input of v) to v - 1.
// No combined send+recv kinds are needed: the order of the transfers between two compute
// steps (a "gap") is chosen so that all stages' lists are projections of one global order
// of transfers. A walker that executes each step with *blocking, rendezvous* send/recv
// (MPI_Ssend/MPI_Recv, ncclSend/ncclRecv on one stream) therefore never deadlocks, and the
// k-th send from rank a to rank b matches the k-th receive on b from a (same kind,
// micro-batch, adjacent virtual stage).
// What a gap holds: at most one send (of the compute step before it) and the receive of
// the compute step after it, if any. Sends come first within a gap unless the pairing
// requires the receive first (e.g. the 1F1B steady-state exchange between neighbours, where
// one side sends first and the other receives first). GPipe and 1F1B gaps hold nothing
// else. Interleaved lists may also receive ahead of time: a RecvActivation/RecvGrad sits in
// an earlier gap than the one right before its Forward/Backward, as Megatron posts receives
// early; that is what keeps them deadlock-free under rendezvous sends. So an interleaved
// gap can hold two receives: e.g. pp 2, m 4, vpp 2, stage 1 runs Backward(1, chunk 1),
// RecvActivation(2, chunk 0), RecvGrad(0, chunk 0), SendGrad(1, chunk 1), Forward(2,
// chunk 0), where RecvGrad(0, chunk 0) is one compute step early (it feeds the Backward
// after that Forward). The pairing does not bound how early a receive may be; in the
// configurations checked (pp up to 64, vpp up to 12, m up to 16 pp; not exhaustive) it is
// at most one compute step, so a gap holds at most one send and two receives, the early
// receive after the gap's own receive and before its send. Walkers must not assume one
// receive per gap.
// Timing model: with eager sends (MPI_Isend / a send on a communication stream; the sender
// does not wait for the receiver) and blocking receives, uniform stages reach the closed
// forms: (m + pp - 1)(tf + tb) for GPipe and 1F1B, and a bubble of (pp - 1)/(vpp * m) of the
// ideal time for interleaved. Rendezvous sends stay deadlock-free and give the same
// makespan for GPipe/1F1B, but serialise interleaved ranks (slower), so executors should
// post sends without waiting for the receiver.
enum class StepKind { Forward, Backward, SendActivation, RecvActivation, SendGrad, RecvGrad };

struct ScheduleStep {
  StepKind kind = StepKind::Forward;
  int microbatch = 0;
  int chunk = 0;       // model chunk (virtual stage) on this rank, 0..vpp-1
  int peer_stage = -1; // for send/recv: the pipeline rank on the other end
  bool operator==(const ScheduleStep&) const = default;
};

inline bool is_compute(StepKind k) { return k == StepKind::Forward || k == StepKind::Backward; }
inline bool is_send(StepKind k) { return k == StepKind::SendActivation || k == StepKind::SendGrad; }
inline bool is_recv(StepKind k) { return k == StepKind::RecvActivation || k == StepKind::RecvGrad; }
inline int virtual_stage(int pp, int stage, int chunk) { return chunk * pp + stage; }

// All ranks' lists at once: result[stage]. Cost O(pp * microbatches * vpp) steps, each
// O(1), plus O(log pp) each time the pairing must break a wait by taking a receive early
// (most transfers of interleaved, none of GPipe/1F1B); build_schedule() below calls this
// and keeps one rank.
std::vector<std::vector<ScheduleStep>> build_all_schedules(ScheduleKind kind, int pp,
                                                           int microbatches, int vpp = 1);
// Memoized build_all_schedules (thread-safe): the search simulates many strategies that
// share (kind, pp, microbatches, vpp).
std::shared_ptr<const std::vector<std::vector<ScheduleStep>>> shared_schedules(
    ScheduleKind kind, int pp, int microbatches, int vpp = 1);

// Steps of pipeline rank `stage` (0..pp-1) for `microbatches` micro-batches. Sends and
// receives appear where that rank would post them, paired across stages so a walker that
// executes them with blocking send/recv cannot deadlock.
// Interleaved requires microbatches % pp == 0 (Megatron's rule) and vpp > 1.
std::vector<ScheduleStep> build_schedule(ScheduleKind kind, int pp, int stage, int microbatches,
                                         int vpp = 1);

// Largest number of micro-batches whose activations are alive at once on `stage`
// (1F1B: min(pp - stage, m); GPipe: m). Used by the memory model.
// Interleaved: ceil(peak chunk activations / vpp), i.e. in units of a whole stage's layers.
int peak_in_flight(ScheduleKind kind, int pp, int stage, int microbatches, int vpp = 1);
// Largest number of (micro-batch, chunk) activations alive at once on `stage` (for vpp == 1
// equal to peak_in_flight). Memory = this x activations of one chunk.
int peak_chunks_in_flight(ScheduleKind kind, int pp, int stage, int microbatches, int vpp = 1);
// Number of forwards before the first backward on `stage` (1F1B: min(pp - stage - 1, m)).
int warmup_forwards(ScheduleKind kind, int pp, int stage, int microbatches, int vpp = 1);

const char* to_string(StepKind k);

}  // namespace strata::planner
