// Pipeline schedules as data.
//
// Two steps:
//  1. The compute order of each rank (which forward/backward of which micro-batch and chunk
//     comes next): GPipe (all forwards, then all backwards), 1F1B (pp - stage - 1 warm-up
//     forwards, then one-forward-one-backward, then the remaining backwards) and Megatron's
//     interleaved 1F1B (micro-batches in groups of pp per chunk; warm-up
//     (pp - stage - 1) * 2 + (vpp - 1) * pp chunk-forwards).
//  2. The transfers. Each compute step needs at most one receive right before it and
//     produces at most one send right after it, so between two compute steps a rank has a
//     "gap" holding at most one send and one receive. An abstract execution with instant
//     compute posts each rank's gap and matches sends with receives; every match is
//     appended to both ranks' lists at once, so all lists are projections of one global
//     order of transfers. With blocking rendezvous send/recv that order can always be
//     followed: no deadlock. Matches where both ops are first in their gap (send before
//     receive) are taken first; when none is left the ranks would wait on each other, and
//     one receive is moved ahead of its gap's send — preferring a pair of neighbours that
//     exchange with each other (the 1F1B steady state), then the oldest waiting pair.
#include "planner/schedule.h"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>

#include <fmt/format.h>

#include "common/errors.h"

namespace strata::planner {

namespace {

struct ComputeOp {
  bool forward;
  int mb;
  int chunk;
};

void check_args(ScheduleKind kind, int pp, int microbatches, int vpp) {
  if (pp < 1) input_error("schedule: pp ({}) must be >= 1", pp);
  if (microbatches < 1) input_error("schedule: number of micro-batches ({}) must be >= 1", microbatches);
  if (vpp < 1) input_error("schedule: vpp ({}) must be >= 1", vpp);
  if (kind == ScheduleKind::Interleaved) {
    if (vpp < 2) input_error("schedule: interleaved requires vpp > 1 (got {})", vpp);
    if (pp < 2) input_error("schedule: interleaved requires pp > 1 (got {})", pp);
    if (microbatches % pp != 0)
      input_error("schedule: interleaved requires the number of micro-batches ({}) to be a "
                  "multiple of pp ({})",
                  microbatches, pp);
  } else if (vpp != 1) {
    input_error("schedule: {} requires vpp == 1 (got {}); use interleaved for vpp > 1",
                to_string(kind), vpp);
  }
}

int warmup_count(ScheduleKind kind, int pp, int stage, int m, int vpp) {
  switch (kind) {
    case ScheduleKind::GPipe: return m;
    case ScheduleKind::OneFOneB: return std::min(pp - stage - 1, m);
    case ScheduleKind::Interleaved: {
      const int total = m * vpp;
      return std::min((pp - stage - 1) * 2 + (vpp - 1) * pp, total);
    }
  }
  return 0;
}

// Megatron's interleaved mapping of the i-th chunk-step of a rank to (micro-batch, chunk):
// micro-batches go in groups of pp through chunk 0, 1, ..., vpp-1 (backward: vpp-1 .. 0).
ComputeOp interleaved_op(int i, bool forward, int pp, int vpp) {
  const int group = i / (pp * vpp);
  const int in_group = i % (pp * vpp);
  int chunk = in_group / pp;
  if (!forward) chunk = vpp - 1 - chunk;
  return ComputeOp{forward, group * pp + in_group % pp, chunk};
}

std::vector<ComputeOp> compute_order(ScheduleKind kind, int pp, int stage, int m, int vpp) {
  std::vector<ComputeOp> ops;
  const int total = m * vpp;
  ops.reserve(2 * static_cast<std::size_t>(total));
  auto fwd = [&](int i) {
    return kind == ScheduleKind::Interleaved ? interleaved_op(i, true, pp, vpp)
                                             : ComputeOp{true, i, 0};
  };
  auto bwd = [&](int i) {
    return kind == ScheduleKind::Interleaved ? interleaved_op(i, false, pp, vpp)
                                             : ComputeOp{false, i, 0};
  };
  const int warm = warmup_count(kind, pp, stage, m, vpp);
  for (int i = 0; i < warm; ++i) ops.push_back(fwd(i));
  for (int i = 0; i < total - warm; ++i) {
    ops.push_back(fwd(warm + i));
    ops.push_back(bwd(i));
  }
  for (int i = total - warm; i < total; ++i) ops.push_back(bwd(i));
  return ops;
}

// One pending transfer op of a gap. `peer` is the rank on the other end (the receiver of a
// send, the sender of a receive), so the pairing never decodes it from the message id.
struct GapOp {
  bool send = false;
  bool matched = false;
  int msg = -1;
  ScheduleStep step;
};

struct RankState {
  std::vector<ComputeOp> comp;
  int gap = 0;     // current gap index 0..comp.size(); comp.size()+1 = done
  GapOp ops[2];    // [send, recv] of the current gap (either may be absent)
  int nops = 0;
  std::vector<ScheduleStep> out;
};

class Pairing {
 public:
  Pairing(ScheduleKind kind, int pp, int m, int vpp) : pp_(pp), m_(m), vpp_(vpp) {
    nv_ = pp * vpp;
    ranks_.resize(pp);
    const std::size_t nmsg = 2 * static_cast<std::size_t>(nv_) * m;
    flags_.assign(nmsg, 0);
    recv_gap_.assign(nmsg, -1);
    for (int st = 0; st < pp; ++st) {
      RankState& r = ranks_[st];
      r.comp = compute_order(kind, pp, st, m, vpp);
      // Exact length of the list: each compute step plus its receive and its send.
      std::size_t steps = r.comp.size();
      for (int g = 0; g < static_cast<int>(r.comp.size()); ++g) {
        const ComputeOp& c = r.comp[g];
        const int v = virtual_stage(pp, st, c.chunk);
        if (c.forward ? v > 0 : v < nv_ - 1) ++steps;      // its receive
        if (c.forward ? v < nv_ - 1 : v > 0) ++steps;      // its send
        if (c.forward && v > 0) recv_gap_[msg_id(0, v - 1, c.mb)] = g;
        if (!c.forward && v < nv_ - 1) recv_gap_[msg_id(1, v + 1, c.mb)] = g;
      }
      r.out.reserve(steps);
    }
    while (leaves_ < static_cast<std::size_t>(pp)) leaves_ *= 2;
    tree_.assign(2 * leaves_, kNoKey);
    is_dirty_.assign(pp, 0);
    dirty_.reserve(pp);
  }

  std::vector<std::vector<ScheduleStep>> run() {
    for (int s = 0; s < pp_; ++s) touch(s);
    for (int s = 0; s < pp_; ++s) enter_gap(s);
    while (true) {
      int msg = -1;
      while (clean_head_ < clean_.size()) {
        const int c = clean_[clean_head_++];
        if (!(flags_[c] & kMatched)) {
          msg = c;
          break;
        }
      }
      if (clean_head_ == clean_.size()) {
        clean_.clear();
        clean_head_ = 0;
      }
      if (msg < 0) msg = pick_stuck();
      if (msg < 0) break;
      match(msg);
    }
    for (int s = 0; s < pp_; ++s)
      STRATA_CHECK(ranks_[s].gap > static_cast<int>(ranks_[s].comp.size()),
                   "pipeline schedule pairing deadlocked at rank {} (pp {}, m {}, vpp {})", s,
                   pp_, m_, vpp_);
    std::vector<std::vector<ScheduleStep>> out(pp_);
    for (int s = 0; s < pp_; ++s) out[s] = std::move(ranks_[s].out);
    return out;
  }

 private:
  // Per-message flags.
  static constexpr unsigned char kPostedSend = 1, kPostedRecv = 2, kMatched = 4;

  // Message ids: activation (kind 0) or gradient (kind 1) leaving virtual stage v for mb.
  int msg_id(int kind, int v, int mb) const { return (kind * nv_ + v) * m_ + mb; }
  int sender_of(int msg) const { return (msg / m_) % nv_ % pp_; }
  int next_rank(int s) const { return s == pp_ - 1 ? 0 : s + 1; }
  int prev_rank(int s) const { return s == 0 ? pp_ - 1 : s - 1; }
  // Sender and receiver of op i of rank s's current gap.
  int op_sender(int s, const GapOp& op) const { return op.send ? s : op.step.peer_stage; }
  int op_receiver(int s, const GapOp& op) const { return op.send ? op.step.peer_stage : s; }

  // Sets up the gap `gap` of rank s (send of compute gap-1, receive of compute gap),
  // emitting compute steps past empty gaps.
  void enter_gap(int s) {
    RankState& r = ranks_[s];
    const int n = static_cast<int>(r.comp.size());
    while (r.gap <= n) {
      r.nops = 0;
      if (r.gap >= 1) {
        const ComputeOp& c = r.comp[r.gap - 1];
        const int v = virtual_stage(pp_, s, c.chunk);
        if (c.forward && v < nv_ - 1) {
          r.ops[r.nops++] = GapOp{true, false, msg_id(0, v, c.mb),
                                  ScheduleStep{StepKind::SendActivation, c.mb, c.chunk, next_rank(s)}};
        } else if (!c.forward && v > 0) {
          r.ops[r.nops++] = GapOp{true, false, msg_id(1, v, c.mb),
                                  ScheduleStep{StepKind::SendGrad, c.mb, c.chunk, prev_rank(s)}};
        }
      }
      if (r.gap < n) {
        const ComputeOp& c = r.comp[r.gap];
        const int v = virtual_stage(pp_, s, c.chunk);
        if (c.forward && v > 0) {
          r.ops[r.nops++] = GapOp{false, false, msg_id(0, v - 1, c.mb),
                                  ScheduleStep{StepKind::RecvActivation, c.mb, c.chunk, prev_rank(s)}};
        } else if (!c.forward && v < nv_ - 1) {
          r.ops[r.nops++] = GapOp{false, false, msg_id(1, v + 1, c.mb),
                                  ScheduleStep{StepKind::RecvGrad, c.mb, c.chunk, next_rank(s)}};
        }
      }
      int open = 0;
      for (int i = 0; i < r.nops; ++i) {
        if (flags_[r.ops[i].msg] & kMatched) r.ops[i].matched = true;  // received ahead of its gap
        else ++open;
      }
      if (open > 0) {
        for (int i = 0; i < r.nops; ++i)
          if (!r.ops[i].matched) post(s, i);
        detect_exchange(s);
        return;
      }
      advance_past_gap(s);
    }
  }

  // Two neighbours whose gaps are mirror images ([send x, recv y] and [send y, recv x]) would
  // wait on each other with sends first: the lower rank sends first, the higher receives
  // first (the 1F1B steady-state exchange). Detected here in O(1) so no scan is needed.
  void detect_exchange(int s) {
    const RankState& r = ranks_[s];
    if (r.nops != 2 || r.ops[0].matched || r.ops[1].matched) return;
    const int b = r.ops[0].step.peer_stage;  // receiver of the send
    if (r.ops[1].step.peer_stage != b) return;  // sender of the receive
    const RankState& rb = ranks_[b];
    if (rb.nops != 2 || rb.ops[0].matched || rb.ops[1].matched) return;
    if (rb.ops[0].msg != r.ops[1].msg || rb.ops[1].msg != r.ops[0].msg) return;
    clean_.push_back(s < b ? r.ops[0].msg : rb.ops[0].msg);
  }

  // All ops of the current gap are done: run the compute step and move to the next gap.
  void advance_past_gap(int s) {
    RankState& r = ranks_[s];
    const int n = static_cast<int>(r.comp.size());
    if (r.gap < n) {
      const ComputeOp& c = r.comp[r.gap];
      r.out.push_back(ScheduleStep{c.forward ? StepKind::Forward : StepKind::Backward, c.mb,
                                   c.chunk, -1});
    }
    ++r.gap;
  }

  int head_index(int s) const {
    const RankState& r = ranks_[s];
    for (int i = 0; i < r.nops; ++i)
      if (!r.ops[i].matched) return i;
    return -1;
  }
  bool is_head(int s, int msg) const {
    int h = head_index(s);
    return h >= 0 && ranks_[s].ops[h].msg == msg;
  }

  // Op i of rank s is posted; if its partner is posted too, the pair may be a clean match.
  void post(int s, int i) {
    const GapOp& op = ranks_[s].ops[i];
    unsigned char& f = flags_[op.msg];
    f |= op.send ? kPostedSend : kPostedRecv;
    if (f & (op.send ? kPostedRecv : kPostedSend)) classify(s, op);
  }

  // A clean match: both ops are first (unmatched) in their gaps.
  void classify(int s, const GapOp& op) {
    if (is_head(op_sender(s, op), op.msg) && is_head(op_receiver(s, op), op.msg))
      clean_.push_back(op.msg);
  }

  // No clean match left (with sends first in every gap the ranks would wait on each other):
  // take a posted send whose receive is nearest on its rank, i.e. move that receive ahead
  // of its gap's send (distance 0; preferring two neighbours that each wait to send to the
  // other, the 1F1B steady-state exchange) or ahead of the compute steps before it
  // (distance d >= 1 gaps: receiving early, as Megatron's interleaved schedule does).
  // Among those the smallest (distance, not-exchange, sending rank) is taken. The key of
  // each rank is kept in a min-tree over ranks; only ranks whose key may have changed since
  // the last call (marked by touch()) are recomputed, so a call costs O(log pp) per changed
  // rank instead of a scan of all pp ranks.
  int pick_stuck() {
    for (int a : dirty_) {
      is_dirty_[a] = 0;
      set_key(a, stuck_key(a));
    }
    dirty_.clear();
    const long best_key = tree_[1];
    if (best_key == kNoKey) return -1;
    const int a = static_cast<int>(best_key % pp_);
    return ranks_[a].ops[head_index(a)].msg;
  }

  // Key of rank a's candidate (smaller is taken first; the rank breaks ties), or kNoKey when
  // the head op of a is not a send. Depends only on the state of a and of the receiver of
  // a's head send (a neighbour of a).
  long stuck_key(int a) const {
    const int ha = head_index(a);
    if (ha < 0 || !ranks_[a].ops[ha].send) return kNoKey;
    const GapOp& op = ranks_[a].ops[ha];
    const int b = op.step.peer_stage;
    const int d = recv_gap_[op.msg] - ranks_[b].gap;
    STRATA_CHECK(d >= 0, "receive of a pending send lies behind its rank");
    bool exchange = false;
    if (d == 0) {
      const int hb = head_index(b);
      exchange = hb >= 0 && ranks_[b].ops[hb].send && ranks_[b].ops[hb].step.peer_stage == a;
    }
    return (static_cast<long>(d) * 2 + (exchange ? 0 : 1)) * pp_ + a;
  }

  void set_key(int a, long key) {
    std::size_t i = leaves_ + static_cast<std::size_t>(a);
    if (tree_[i] == key) return;
    tree_[i] = key;
    for (i /= 2; i >= 1; i /= 2) {
      const long k = std::min(tree_[2 * i], tree_[2 * i + 1]);
      if (tree_[i] == k) break;  // the ancestors already hold the right minimum
      tree_[i] = k;
    }
  }

  // The state (gap or head op) of rank s changed: the keys of s and of the ranks that may
  // send to s (its neighbours, wrapping around) must be recomputed before the next pick.
  void touch(int s) {
    for (int t : {s, prev_rank(s), next_rank(s)}) {
      if (!is_dirty_[t]) {
        is_dirty_[t] = 1;
        dirty_.push_back(t);
      }
    }
  }

  void match(int msg) {
    flags_[msg] |= kMatched;
    const int a = sender_of(msg);
    {
      RankState& r = ranks_[a];
      for (int i = 0; i < r.nops; ++i) {
        if (r.ops[i].msg == msg && !r.ops[i].matched && r.ops[i].send) {
          r.ops[i].matched = true;
          r.out.push_back(r.ops[i].step);
          break;
        }
      }
    }
    touch(a);
    const int kind = msg / m_ / nv_;
    const int b = kind == 0 ? next_rank(a) : prev_rank(a);  // a != b: pp > 1 whenever we send
    RankState& rb = ranks_[b];
    if (recv_gap_[msg] != rb.gap) {
      // Received ahead of its gap: record it now; the rank's position does not change.
      const ComputeOp& c = rb.comp[recv_gap_[msg]];
      rb.out.push_back(ScheduleStep{kind == 0 ? StepKind::RecvActivation : StepKind::RecvGrad,
                                    c.mb, c.chunk, a});
      advance_after_match(a);
      return;
    }
    for (int i = 0; i < rb.nops; ++i) {
      if (rb.ops[i].msg == msg && !rb.ops[i].matched && !rb.ops[i].send) {
        rb.ops[i].matched = true;
        rb.out.push_back(rb.ops[i].step);
        break;
      }
    }
    touch(b);
    advance_after_match(a);
    advance_after_match(b);
  }

  void advance_after_match(int s) {
    const int h = head_index(s);
    if (h < 0) {
      advance_past_gap(s);
      enter_gap(s);
    } else {
      // The second op became the head: it may now be a clean match.
      const GapOp& op = ranks_[s].ops[h];
      if (flags_[op.msg] & (op.send ? kPostedRecv : kPostedSend)) classify(s, op);
    }
  }

  int pp_, m_, vpp_, nv_;
  std::vector<RankState> ranks_;
  std::vector<unsigned char> flags_;  // message -> kPostedSend | kPostedRecv | kMatched
  std::vector<int> recv_gap_;         // message -> gap of its receive on the receiving rank
  // FIFO of candidate clean matches (entries may be stale: matched since they were queued).
  std::vector<int> clean_;
  std::size_t clean_head_ = 0;
  // pick_stuck()'s min-tree: leaves_ leaves (a power of two >= pp), leaf leaves_ + a holds
  // stuck_key(a) as of the last pick; dirty_ lists the ranks to recompute before the next.
  static constexpr long kNoKey = std::numeric_limits<long>::max();
  std::size_t leaves_ = 1;
  std::vector<long> tree_;
  std::vector<int> dirty_;
  std::vector<char> is_dirty_;
};

}  // namespace

std::vector<std::vector<ScheduleStep>> build_all_schedules(ScheduleKind kind, int pp,
                                                           int microbatches, int vpp) {
  check_args(kind, pp, microbatches, vpp);
  return Pairing(kind, pp, microbatches, vpp).run();
}

std::shared_ptr<const std::vector<std::vector<ScheduleStep>>> shared_schedules(
    ScheduleKind kind, int pp, int microbatches, int vpp) {
  using Key = std::tuple<int, int, int, int>;
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<const std::vector<std::vector<ScheduleStep>>>> cache;
  const Key key{static_cast<int>(kind), pp, microbatches, vpp};
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  auto built = std::make_shared<const std::vector<std::vector<ScheduleStep>>>(
      build_all_schedules(kind, pp, microbatches, vpp));
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() > 4096) cache.clear();  // bound memory in very long searches
  return cache.emplace(key, std::move(built)).first->second;
}

std::vector<ScheduleStep> build_schedule(ScheduleKind kind, int pp, int stage, int microbatches,
                                         int vpp) {
  check_args(kind, pp, microbatches, vpp);
  if (stage < 0 || stage >= pp)
    input_error("schedule: stage ({}) must be in 0 .. pp-1 ({})", stage, pp - 1);
  return (*shared_schedules(kind, pp, microbatches, vpp))[stage];
}

int peak_chunks_in_flight(ScheduleKind kind, int pp, int stage, int microbatches, int vpp) {
  check_args(kind, pp, microbatches, vpp);
  if (stage < 0 || stage >= pp)
    input_error("schedule: stage ({}) must be in 0 .. pp-1 ({})", stage, pp - 1);
  int alive = 0, peak = 0;
  for (const ComputeOp& c : compute_order(kind, pp, stage, microbatches, vpp)) {
    alive += c.forward ? 1 : -1;
    peak = std::max(peak, alive);
  }
  return peak;
}

int peak_in_flight(ScheduleKind kind, int pp, int stage, int microbatches, int vpp) {
  const int chunks = peak_chunks_in_flight(kind, pp, stage, microbatches, vpp);
  return (chunks + vpp - 1) / vpp;
}

int warmup_forwards(ScheduleKind kind, int pp, int stage, int microbatches, int vpp) {
  check_args(kind, pp, microbatches, vpp);
  if (stage < 0 || stage >= pp)
    input_error("schedule: stage ({}) must be in 0 .. pp-1 ({})", stage, pp - 1);
  return warmup_count(kind, pp, stage, microbatches, vpp);
}

const char* to_string(StepKind k) {
  switch (k) {
    case StepKind::Forward: return "forward";
    case StepKind::Backward: return "backward";
    case StepKind::SendActivation: return "send_activation";
    case StepKind::RecvActivation: return "recv_activation";
    case StepKind::SendGrad: return "send_grad";
    case StepKind::RecvGrad: return "recv_grad";
  }
  return "?";
}

}  // namespace strata::planner
