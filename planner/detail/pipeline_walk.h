// PipelineWalk (private to strata_planner): the discrete-event walk of every pipeline
// rank's build_schedule() list, given per-virtual-stage forward/backward durations and
// per-link p2p times.
//
// Streams per rank: a compute stream (forward/backward, in list order) and a
// communication stream (sends, in list order, asynchronous to compute). A receive blocks
// the compute stream until the matching message has arrived (the walker's receive is
// blocking: a compute step waits for every receive listed since the previous compute
// step, including ones posted early for a later step); the k-th send on channel
// (kind, src) matches the k-th receive of that kind from src (schedule.h guarantees it).
//
// Speed: the event order does not depend on the durations, only on the schedule. So a
// schedule (kind, pp, micro-batches, vpp) is compiled once into a flat program: compute
// steps in a dependency-respecting order, each with its predecessor on the same rank, the
// message it waits for and the message it sends. Timing a strategy is then one pass of
// max/plus over that array (no queues, no branches on step kinds): O(compute steps).
// Exposed so tests can check it against closed forms with synthetic stage times.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "planner/schedule.h"
#include "planner/strategy.h"

namespace strata::planner::detail {

class PipelineWalk {
 public:
  struct OpInfo {             // what timing a step needs (kept small: it is the hot loop)
    std::int32_t stage;
    std::int32_t dur;       // index into the duration table: 2 * virtual stage + (backward)
    std::int32_t prev;      // previous compute step on the same rank, -1 if first
    std::int32_t dep_begin, dep_end;  // messages this step waits for: deps[begin, end)
    std::int32_t out;       // message this step sends, -1 if none
  };
  struct OpLabel {            // what the step is (for timelines)
    std::int32_t mb, chunk;
    bool forward;
  };
  struct MsgInfo {
    std::int32_t src_op;    // compute step that produces it
    std::int32_t prev;      // previous message on the sender's communication stream, -1
    std::int32_t link;      // index into the link table
    bool activation;
  };
  struct Program;           // a compiled schedule (see pipeline_walk.cpp)
  // What the extension of a schedule (kind, pp, vpp) provably adds (compute_end_bound).
  struct Extension {
    bool proven = false;
    // Per rank: steps the longer short walk runs after the shorter walk's last step, as
    // counts per duration index (2 * virtual stage + backward).
    std::vector<std::vector<std::int32_t>> after;
  };

  // fwd / bwd: pp * vpp durations by virtual stage (v = chunk * pp + rank); link[p]: p2p
  // time from rank p to rank (p + 1) % pp (and back), pp entries (empty when pp == 1).
  //
  // Many micro-batches: the schedule reaches a periodic steady state after its warm-up,
  // each further pp micro-batches adding the same time to every rank. Unless every_step
  // is set, a run with more than steady_state_limit(pp) micro-batches walks two shorter
  // schedules (m1 and m1 + pp micro-batches, m1 a multiple of pp past the warm-up) and
  // extends the per-rank figures linearly to `microbatches`: bounded work for any global
  // batch. The compute steps kept are then those of the m1 + pp walk, shifted by their
  // rank's extension (exact for the last steps, which is what the simulator reads);
  // timelines ask for every_step.
  void run(ScheduleKind kind, int pp, int microbatches, int vpp, const std::vector<double>& fwd,
           const std::vector<double>& bwd, const std::vector<double>& link,
           bool every_step = false);
  // True when run() was last called with exactly these inputs (results can be reused).
  bool same_inputs(ScheduleKind kind, int pp, int microbatches, int vpp,
                   const std::vector<double>& fwd, const std::vector<double>& bwd,
                   const std::vector<double>& link, bool every_step = false) const;
  // Micro-batch count above which run() extends a shorter walk (see run()).
  static int steady_state_limit(int pp);
  // Whether run() (every_step false) extends a shorter walk for this many micro-batches.
  static bool extends(int pp, int microbatches) { return microbatches > steady_state_limit(pp); }
  // The peak_chunks run() leaves (pp entries), without compiling or walking the schedule:
  // every rank runs its warm-up forwards, then (forward, backward) pairs, then the rest of
  // the backwards (schedule.cpp's compute order), so it holds warm-up + 1 chunks at its
  // peak, or all of them when the warm-up is every forward; extended like run() extends it.
  static std::vector<int> peak_in_flight(ScheduleKind kind, int pp, int microbatches, int vpp,
                                         bool every_step = false);
  // A lower bound on the largest compute_end run() (every_step false) gives for these stage
  // times, without walking: 0 when nothing is proven for the schedule. See
  // pipeline_walk.cpp for the proof; the search prunes with it.
  double compute_end_bound(ScheduleKind kind, int pp, int microbatches, int vpp,
                           const std::vector<double>& fwd, const std::vector<double>& bwd,
                           const std::vector<double>& link);
  // Whether the last run() extended a shorter walk.
  bool extended() const { return extended_; }

  // p2p time (transfers + queueing behind earlier sends) on the dependency chain that ends
  // at rank s's last compute step.
  double chain_p2p(int s) const;

  int pp() const { return pp_; }
  // Per pipeline rank.
  std::vector<double> compute_end;         // end of the last compute step
  std::vector<double> idle;                // compute-stream time spent waiting on receives
  std::vector<double> busy_fwd, busy_bwd;  // compute-stream busy time
  std::vector<int> peak_chunks;            // peak (micro-batch, chunk) activations alive
  int last_backward(int stage, int chunk) const;  // compute-step index

  // Compute steps and messages of the last run (for timelines).
  std::size_t num_ops() const;
  const OpInfo& op(std::size_t i) const;
  const OpLabel& label(std::size_t i) const;
  double op_start(std::size_t i) const { return extended_ ? start_[i] + op_shift(i) : start_[i]; }
  double op_end(std::size_t i) const { return extended_ ? end_[i] + op_shift(i) : end_[i]; }
  std::size_t num_msgs() const;
  const MsgInfo& msg(std::size_t i) const;
  double msg_start(std::size_t i) const { return extended_ ? msg_start_[i] + msg_shift(i) : msg_start_[i]; }
  double msg_end(std::size_t i) const { return extended_ ? msg_end_[i] + msg_shift(i) : msg_end_[i]; }

 private:
  std::shared_ptr<const Program> prog_;
  std::vector<std::shared_ptr<const Program>> cache_;  // recently compiled schedules
  ScheduleKind kind_ = ScheduleKind::OneFOneB;
  int pp_ = 0, m_ = 0, vpp_ = 0;
  std::vector<double> fwd_, bwd_, link_;
  bool valid_ = false;
  bool extended_ = false;
  std::vector<double> chain_;  // chain_p2p per rank when extended
  // Extended: what each rank's steps of the longer short walk move by (applied when read:
  // only the last steps are read outside timelines, which never extend).
  std::vector<double> shift_;
  double op_shift(std::size_t i) const;
  double msg_shift(std::size_t i) const;
  void walk(ScheduleKind kind, int pp, int m, int vpp, const std::vector<double>& fwd,
            const std::vector<double>& bwd, const std::vector<double>& link);
  std::vector<double> dur_, start_, end_, msg_start_, msg_end_;
  std::vector<std::int32_t> waited_;  // message whose arrival started the step, or -1
  std::map<std::tuple<int, int, int>, Extension> extensions_;
  const Extension& extension_for(ScheduleKind kind, int pp, int vpp);
};

}  // namespace strata::planner::detail
