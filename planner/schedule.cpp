// Pipeline schedules as data.
//
// Two steps:
//  1. The compute order of each rank (which forward/backward of which micro-batch and chunk
//     comes next): GPipe (all forwards, then all backwards), 1F1B (pp - stage - 1 warm-up
//     forwards, then one-forward-one-backward, then the remaining backwards) and Megatron's
//     interleaved 1F1B (micro-batches in groups of pp per chunk; warm-up
//     (pp - stage - 1) * 2 + (vpp - 1) * pp chunk-forwards). ComputeOrder gives the op at
//     any position, and the position of any op, in O(1) without storing the orders.
//  2. The transfers. Each compute step needs at most one receive before it and produces at
//     most one send right after it, so between two compute steps a rank has a "gap" whose
//     own ops are at most one send and one receive. An abstract execution with instant
//     compute posts each rank's gap and matches sends with receives; every match is
//     appended to both ranks' lists at once, so all lists are projections of one global
//     order of transfers. With blocking rendezvous send/recv that order can always be
//     followed: no deadlock. Matches where both ops are first in their gap (send before
//     receive) are taken first, in the order they became possible; so are 1F1B
//     steady-state exchanges (two neighbours each waiting to send to the other: the lower
//     rank sends first), detected as they are posted. When none is left the ranks would
//     wait on each other, and the pending send whose receive is nearest on its rank is
//     taken (pick_stuck): a receive moved ahead of its own gap's send (distance 0,
//     preferring such an exchange pair), else a receive taken d >= 1 gaps early, before
//     compute steps that precede its own (it lands in an earlier gap, which then holds two
//     receives); ties go to the lowest sending rank. Only interleaved gets there (GPipe and
//     1F1B never do). Cost: O(1) per transfer for the first kind of match, O(log pp) for
//     the second (a min-tree over ranks, updated only for ranks whose state changed).
#include "planner/schedule.h"

#include <algorithm>
#include <cstdint>
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

// The compute order of every rank, without materialising it: rank `stage` runs `warm`
// forwards, then total - warm (forward, backward) pairs, then the last warm backwards
// (total = m * vpp chunk-steps each way), where the i-th forward / backward is the same on
// every rank (interleaved_op for interleaved, micro-batch i of chunk 0 otherwise). So the
// op at position g of a rank, and the position of a given op, are O(1) closed forms.
class ComputeOrder {
 public:
  ComputeOrder(ScheduleKind kind, int pp, int m, int vpp)
      : interleaved_(kind == ScheduleKind::Interleaved), vpp_(vpp), total_(m * vpp) {
    warm_.resize(pp);
    for (int s = 0; s < pp; ++s) warm_[s] = warmup_count(kind, pp, s, m, vpp);
    if (interleaved_) {
      fwd_.resize(total_);
      bwd_.resize(total_);
      fwd_index_.resize(total_);
      bwd_index_.resize(total_);
      for (int i = 0; i < total_; ++i) {
        fwd_[i] = interleaved_op(i, true, pp, vpp);
        bwd_[i] = interleaved_op(i, false, pp, vpp);
        fwd_index_[fwd_[i].mb * vpp + fwd_[i].chunk] = i;
        bwd_index_[bwd_[i].mb * vpp + bwd_[i].chunk] = i;
      }
    }
  }

  int size() const { return 2 * total_; }  // compute steps of every rank

  ComputeOp at(int stage, int g) const {
    const int w = warm_[stage];
    if (g < w) return fwd(g);
    if (g < 2 * total_ - w) {
      const int j = g - w;
      return (j & 1) ? bwd(j >> 1) : fwd(w + (j >> 1));
    }
    return bwd(g - total_);
  }

  // Position of Forward(mb, chunk) / Backward(mb, chunk) in the order of rank `stage`.
  int position(int stage, bool forward, int mb, int chunk) const {
    const int w = warm_[stage];
    if (forward) {
      const int i = interleaved_ ? fwd_index_[mb * vpp_ + chunk] : mb;
      return i < w ? i : w + 2 * (i - w);
    }
    const int j = interleaved_ ? bwd_index_[mb * vpp_ + chunk] : mb;
    return j < total_ - w ? w + 2 * j + 1 : total_ + j;
  }

 private:
  ComputeOp fwd(int i) const { return interleaved_ ? fwd_[i] : ComputeOp{true, i, 0}; }
  ComputeOp bwd(int i) const { return interleaved_ ? bwd_[i] : ComputeOp{false, i, 0}; }

  bool interleaved_;
  int vpp_, total_;
  std::vector<int> warm_;
  std::vector<ComputeOp> fwd_, bwd_;        // interleaved: the i-th forward / backward
  std::vector<int> fwd_index_, bwd_index_;  // interleaved: (mb * vpp + chunk) -> i
};

std::vector<ComputeOp> compute_order(ScheduleKind kind, int pp, int stage, int m, int vpp) {
  const ComputeOrder order(kind, pp, m, vpp);
  std::vector<ComputeOp> ops(order.size());
  for (int g = 0; g < order.size(); ++g) ops[g] = order.at(stage, g);
  return ops;
}

// One pending transfer op of a gap. step.peer_stage is the rank on the other end (the
// receiver of a send, the sender of a receive).
struct GapOp {
  bool send = false;
  bool matched = false;
  int msg = -1;
  int recv_gap = -1;  // send: the gap of the matching receive on the receiving rank
  ScheduleStep step;
};

// A message and the rank that sends it.
struct Transfer {
  int msg;
  int sender;
};

struct RankState {
  int gap = 0;     // current gap index 0..n (n = compute steps); n + 1 = done
  GapOp ops[2];    // [send, recv] of the current gap (either may be absent)
  int nops = 0;
  std::vector<ScheduleStep> out;
};

class Pairing {
 public:
  Pairing(ScheduleKind kind, int pp, int m, int vpp)
      : pp_(pp), m_(m), vpp_(vpp), order_(kind, pp, m, vpp) {
    nv_ = pp * vpp;
    n_ = order_.size();
    ranks_.resize(pp);
    flags_.assign(2 * static_cast<std::size_t>(nv_) * m, 0);
    for (int st = 0; st < pp; ++st) ranks_[st].out.reserve(list_length(st));
    while (leaves_ < static_cast<std::size_t>(pp)) leaves_ *= 2;
    tree_.assign(2 * leaves_, kNoKey);
    is_dirty_.assign(pp, 0);
    dirty_.reserve(pp);
  }

  std::vector<std::vector<ScheduleStep>> run() {
    for (int s = 0; s < pp_; ++s) touch(s);
    for (int s = 0; s < pp_; ++s) enter_gap(s);
    while (true) {
      Transfer t{-1, -1};
      while (clean_head_ < clean_.size()) {
        const Transfer c = clean_[clean_head_++];
        if (!(flags_[c.msg] & kMatched)) {
          t = c;
          break;
        }
      }
      if (clean_head_ == clean_.size()) {
        clean_.clear();
        clean_head_ = 0;
      }
      if (t.msg < 0) t = pick_stuck();
      if (t.msg < 0) break;
      match(t.msg, t.sender);
    }
    for (int s = 0; s < pp_; ++s) {
      STRATA_CHECK(ranks_[s].gap > n_,
                   "pipeline schedule pairing deadlocked at rank {} (pp {}, m {}, vpp {})", s,
                   pp_, m_, vpp_);
      STRATA_CHECK(ranks_[s].out.size() == list_length(s),
                   "pipeline schedule of rank {} has {} steps, expected {}", s,
                   ranks_[s].out.size(), list_length(s));
    }
    std::vector<std::vector<ScheduleStep>> out(pp_);
    for (int s = 0; s < pp_; ++s) out[s] = std::move(ranks_[s].out);
    return out;
  }

 private:
  // Per-message flags.
  static constexpr unsigned char kPostedSend = 1, kPostedRecv = 2, kMatched = 4;

  // Message ids: activation (kind 0) or gradient (kind 1) leaving virtual stage v for mb.
  // Micro-batch-major, so the messages in flight at one time lie close together in memory.
  int msg_id(int kind, int v, int mb) const { return (mb * 2 + kind) * nv_ + v; }
  int next_rank(int s) const { return s == pp_ - 1 ? 0 : s + 1; }
  int prev_rank(int s) const { return s == 0 ? pp_ - 1 : s - 1; }
  // Sender and receiver of an op of rank s's current gap.
  int op_sender(int s, const GapOp& op) const { return op.send ? s : op.step.peer_stage; }
  int op_receiver(int s, const GapOp& op) const { return op.send ? op.step.peer_stage : s; }

  // Steps in the list of rank s: each compute step with its receive and its send, except
  // that virtual stage 0 receives no activation and sends no gradient, and the last virtual
  // stage sends no activation and receives no gradient (m forwards and backwards each).
  std::size_t list_length(int s) const {
    std::size_t n = 3 * static_cast<std::size_t>(n_);
    if (s == 0) n -= 2 * static_cast<std::size_t>(m_);
    if (s == pp_ - 1) n -= 2 * static_cast<std::size_t>(m_);
    return n;
  }

  // Sets up the gap `gap` of rank s (send of compute gap-1, receive of compute gap),
  // emitting compute steps past empty gaps.
  void enter_gap(int s) {
    RankState& r = ranks_[s];
    const int n = n_;
    while (r.gap <= n) {
      r.nops = 0;
      if (r.gap >= 1) {
        const ComputeOp c = order_.at(s, r.gap - 1);
        const int v = virtual_stage(pp_, s, c.chunk);
        if (c.forward && v < nv_ - 1) {
          // To virtual stage v + 1: the next rank, or chunk c + 1 of rank 0.
          const int to = next_rank(s);
          const int to_chunk = to == 0 ? c.chunk + 1 : c.chunk;
          r.ops[r.nops++] =
              GapOp{true, false, msg_id(0, v, c.mb), order_.position(to, true, c.mb, to_chunk),
                    ScheduleStep{StepKind::SendActivation, c.mb, c.chunk, to}};
        } else if (!c.forward && v > 0) {
          // To virtual stage v - 1: the previous rank, or chunk c - 1 of rank pp - 1.
          const int to = prev_rank(s);
          const int to_chunk = to == pp_ - 1 ? c.chunk - 1 : c.chunk;
          r.ops[r.nops++] =
              GapOp{true, false, msg_id(1, v, c.mb), order_.position(to, false, c.mb, to_chunk),
                    ScheduleStep{StepKind::SendGrad, c.mb, c.chunk, to}};
        }
      }
      if (r.gap < n) {
        const ComputeOp c = order_.at(s, r.gap);
        const int v = virtual_stage(pp_, s, c.chunk);
        if (c.forward && v > 0) {
          const int from = prev_rank(s);
          r.ops[r.nops++] = GapOp{false, false, msg_id(0, v - 1, c.mb), r.gap,
                                  ScheduleStep{StepKind::RecvActivation, c.mb, c.chunk, from}};
        } else if (!c.forward && v < nv_ - 1) {
          const int from = next_rank(s);
          r.ops[r.nops++] = GapOp{false, false, msg_id(1, v + 1, c.mb), r.gap,
                                  ScheduleStep{StepKind::RecvGrad, c.mb, c.chunk, from}};
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
    clean_.push_back(s < b ? Transfer{r.ops[0].msg, s} : Transfer{rb.ops[0].msg, b});
  }

  // All ops of the current gap are done: run the compute step and move to the next gap.
  void advance_past_gap(int s) {
    RankState& r = ranks_[s];
    if (r.gap < n_) {
      const ComputeOp c = order_.at(s, r.gap);
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
    const int sender = op_sender(s, op);
    if (is_head(sender, op.msg) && is_head(op_receiver(s, op), op.msg))
      clean_.push_back(Transfer{op.msg, sender});
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
  Transfer pick_stuck() {
    for (int a : dirty_) {
      is_dirty_[a] = 0;
      set_key(a, stuck_key(a));
    }
    dirty_.clear();
    const std::int64_t best_key = tree_[1];
    if (best_key == kNoKey) return Transfer{-1, -1};
    const int a = static_cast<int>(best_key & 0xffffffff);
    return Transfer{ranks_[a].ops[head_index(a)].msg, a};
  }

  // Key of rank a's candidate: (distance * 2 + not-exchange, a) packed as high and low 32
  // bits (smaller is taken first; the rank breaks ties), or kNoKey when the head op of a is
  // not a send. Depends only on the state of a and of the receiver of a's head send (a
  // neighbour of a).
  std::int64_t stuck_key(int a) const {
    const int ha = head_index(a);
    if (ha < 0 || !ranks_[a].ops[ha].send) return kNoKey;
    const GapOp& op = ranks_[a].ops[ha];
    const int b = op.step.peer_stage;
    const int d = op.recv_gap - ranks_[b].gap;
    STRATA_CHECK(d >= 0, "receive of a pending send lies behind its rank");
    bool exchange = false;
    if (d == 0) {
      const int hb = head_index(b);
      exchange = hb >= 0 && ranks_[b].ops[hb].send && ranks_[b].ops[hb].step.peer_stage == a;
    }
    return ((static_cast<std::int64_t>(d) * 2 + (exchange ? 0 : 1)) << 32) | a;
  }

  void set_key(int a, std::int64_t key) {
    std::size_t i = leaves_ + static_cast<std::size_t>(a);
    if (tree_[i] == key) return;
    tree_[i] = key;
    // Recompute the path to the root (a fixed number of steps and no data-dependent
    // branches: cheaper than stopping early at an unchanged ancestor).
    for (std::int64_t k = key; i > 1; i /= 2) {
      k = std::min(k, tree_[i ^ 1]);
      tree_[i / 2] = k;
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

  // Matches message `msg`, sent by rank a.
  void match(int msg, int a) {
    flags_[msg] |= kMatched;
    const GapOp* send = nullptr;
    {
      // The send is always pending in a's current gap (a clean match or pick_stuck's pick).
      RankState& r = ranks_[a];
      for (int i = 0; i < r.nops; ++i) {
        if (r.ops[i].msg == msg && !r.ops[i].matched && r.ops[i].send) {
          r.ops[i].matched = true;
          r.out.push_back(r.ops[i].step);
          send = &r.ops[i];
          break;
        }
      }
      STRATA_CHECK(send != nullptr, "matched send is not pending on its rank");
    }
    touch(a);
    const bool activation = send->step.kind == StepKind::SendActivation;
    const int recv_gap = send->recv_gap;
    const int b = send->step.peer_stage;  // a != b: pp > 1 whenever we send
    RankState& rb = ranks_[b];
    if (recv_gap != rb.gap) {
      // Received ahead of its gap: record it now; the rank's position does not change.
      const ComputeOp c = order_.at(b, recv_gap);
      rb.out.push_back(ScheduleStep{activation ? StepKind::RecvActivation : StepKind::RecvGrad,
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
  ComputeOrder order_;
  int n_ = 0;  // compute steps of every rank
  std::vector<RankState> ranks_;
  std::vector<unsigned char> flags_;  // message -> kPostedSend | kPostedRecv | kMatched
  // FIFO of candidate clean matches (entries may be stale: matched since they were queued).
  std::vector<Transfer> clean_;
  std::size_t clean_head_ = 0;
  // pick_stuck()'s min-tree: leaves_ leaves (a power of two >= pp), leaf leaves_ + a holds
  // stuck_key(a) as of the last pick; dirty_ lists the ranks to recompute before the next.
  static constexpr std::int64_t kNoKey = std::numeric_limits<std::int64_t>::max();
  std::size_t leaves_ = 1;
  std::vector<std::int64_t> tree_;
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
