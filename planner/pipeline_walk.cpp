#include "planner/detail/pipeline_walk.h"

#include <algorithm>
#include <cmath>
#include <mutex>

#include "common/errors.h"

namespace strata::planner::detail {

struct PipelineWalk::Program {
  ScheduleKind kind;
  int pp, m, vpp;
  std::vector<OpInfo> ops;    // dependency-respecting order
  std::vector<OpLabel> labels;  // same order
  std::vector<MsgInfo> msgs;
  std::vector<std::int32_t> deps;                  // receives per step (CSR, see OpInfo)
  std::vector<std::int32_t> last_op;               // per rank
  std::vector<int> peak_chunks;                    // per rank
  std::vector<std::vector<std::int32_t>> last_bwd;  // [rank][chunk]
};

namespace {

// The search visits candidates grouped by schedule, so a few recent programs suffice.
constexpr std::size_t kProgramCacheSize = 4;

// Walks the step lists once, in an order that respects every dependency (a rank blocked
// on a receive resumes when the matching send is posted), and records the compute steps
// and messages with their links.
std::shared_ptr<const PipelineWalk::Program> compile(ScheduleKind kind, int pp, int m, int vpp) {
  using Program = PipelineWalk::Program;
  // Not shared_schedules(): the search visits each schedule once (candidates are grouped by
  // schedule) and keeps the compiled program, so a process-wide copy would only hold memory.
  const std::vector<std::vector<ScheduleStep>> lists = build_all_schedules(kind, pp, m, vpp);
  auto prog = std::make_shared<Program>();
  Program& P = *prog;
  P.kind = kind;
  P.pp = pp;
  P.m = m;
  P.vpp = vpp;
  std::size_t steps = 0;
  for (const auto& l : lists) steps += l.size();
  P.ops.reserve(2 * static_cast<std::size_t>(pp) * m * vpp);
  P.labels.reserve(2 * static_cast<std::size_t>(pp) * m * vpp);
  P.msgs.reserve(steps / 2);
  P.last_op.assign(pp, -1);
  P.peak_chunks.assign(pp, 0);
  P.last_bwd.assign(pp, std::vector<std::int32_t>(vpp, -1));

  std::vector<std::size_t> pos(pp, 0), read(2 * static_cast<std::size_t>(pp), 0);
  std::vector<std::vector<std::int32_t>> chans(2 * static_cast<std::size_t>(pp));
  std::vector<std::int32_t> last_msg(pp, -1);
  std::vector<std::vector<std::int32_t>> pending(pp);
  std::vector<int> alive(pp, 0), waiting(pp, -1), work;
  work.reserve(pp);
  for (int s = pp - 1; s >= 0; --s) work.push_back(s);

  while (!work.empty()) {
    const int s = work.back();
    work.pop_back();
    const auto& list = lists[s];
    while (pos[s] < list.size()) {
      const ScheduleStep& st = list[pos[s]];
      if (st.kind == StepKind::Forward || st.kind == StepKind::Backward) {
        const bool fw = st.kind == StepKind::Forward;
        const int v = st.chunk * pp + s;
        const auto idx = static_cast<std::int32_t>(P.ops.size());
        const auto dep_begin = static_cast<std::int32_t>(P.deps.size());
        P.deps.insert(P.deps.end(), pending[s].begin(), pending[s].end());
        P.ops.push_back(PipelineWalk::OpInfo{s, 2 * v + (fw ? 0 : 1), P.last_op[s], dep_begin,
                                             static_cast<std::int32_t>(P.deps.size()), -1});
        P.labels.push_back(PipelineWalk::OpLabel{st.microbatch, st.chunk, fw});
        P.last_op[s] = idx;
        pending[s].clear();
        if (fw) {
          P.peak_chunks[s] = std::max(P.peak_chunks[s], ++alive[s]);
        } else {
          --alive[s];
          P.last_bwd[s][st.chunk] = idx;
        }
      } else if (st.kind == StepKind::SendActivation || st.kind == StepKind::SendGrad) {
        const bool act = st.kind == StepKind::SendActivation;
        const int ch = (act ? 0 : pp) + s;
        const int dst = st.peer_stage;
        const std::int32_t src_op = P.last_op[s];
        STRATA_CHECK(src_op >= 0 && P.ops[src_op].out < 0,
                     "schedule: stage {} sends without a compute step to send from", s);
        const auto id = static_cast<std::int32_t>(P.msgs.size());
        P.msgs.push_back(PipelineWalk::MsgInfo{src_op, last_msg[s], act ? s : dst, act});
        P.ops[src_op].out = id;
        last_msg[s] = id;
        chans[ch].push_back(id);
        if (waiting[dst] == ch) {
          waiting[dst] = -1;
          work.push_back(dst);
        }
      } else {  // receive
        const bool act = st.kind == StepKind::RecvActivation;
        const int ch = (act ? 0 : pp) + st.peer_stage;
        if (read[ch] >= chans[ch].size()) {
          waiting[s] = ch;
          break;
        }
        const std::int32_t id = chans[ch][read[ch]++];
        STRATA_CHECK(P.labels[P.msgs[id].src_op].mb == st.microbatch,
                     "pipeline walk: stage {} expected micro-batch {} from stage {}, got {}", s,
                     st.microbatch, st.peer_stage, P.labels[P.msgs[id].src_op].mb);
        pending[s].push_back(id);
      }
      ++pos[s];
    }
  }
  for (int s = 0; s < pp; ++s)
    STRATA_CHECK(pos[s] == lists[s].size(), "pipeline walk deadlocked at stage {} step {}", s,
                 pos[s]);
  return prog;
}

}  // namespace

bool PipelineWalk::same_inputs(ScheduleKind kind, int pp, int m, int vpp,
                               const std::vector<double>& fwd, const std::vector<double>& bwd,
                               const std::vector<double>& link, bool every_step) const {
  if (every_step && extended_) return false;
  return valid_ && kind == kind_ && pp == pp_ && m == m_ && vpp == vpp_ && fwd == fwd_ &&
         bwd == bwd_ && link == link_;
}

// Steady state: m1 = the smallest multiple of pp that is at least max(4 pp, 32) (four
// rounds past the warm-up of pp - 1 forwards, and of the interleaved schedule's pp * vpp
// chunk warm-up); a run is extended only when it is more than twice m1 + pp.
namespace {
int steady_microbatches(int pp) {
  const int want = std::max(4 * pp, 32);
  return (want + pp - 1) / pp * pp;
}
}  // namespace

int PipelineWalk::steady_state_limit(int pp) { return 2 * (steady_microbatches(pp) + pp); }

std::vector<int> PipelineWalk::peak_in_flight(ScheduleKind kind, int pp, int m, int vpp,
                                              bool every_step) {
  auto peaks = [&](int mb) {
    std::vector<int> out(static_cast<std::size_t>(pp));
    const int total = mb * vpp;
    for (int s = 0; s < pp; ++s) {
      const int warm = warmup_forwards(kind, pp, s, mb, vpp);
      out[static_cast<std::size_t>(s)] = warm < total ? warm + 1 : total;
    }
    return out;
  };
  if (every_step || !extends(pp, m)) return peaks(m);
  const int m1 = steady_microbatches(pp), m2 = m1 + pp;
  const std::vector<int> peak1 = peaks(m1);
  std::vector<int> peak = peaks(m2);
  const double rounds = static_cast<double>(m - m2) / pp;  // as run() extends them
  for (std::size_t i = 0; i < peak.size(); ++i)
    peak[i] += static_cast<int>(std::lround(rounds * (peak[i] - peak1[i])));
  return peak;
}

// compute_end_bound. Notation: T_k(q) = the walk's compute_end of rank q with k
// micro-batches, f_v / b_v the step durations of virtual stage v, l_p the link times.
//
// (a) Any walk whose rank p starts with the forward of micro-batch 0, chunk 0 (virtual stage
//     p) and ends with a backward of chunk 0 (schedule.cpp's compute order: warm-up
//     forwards, (forward, backward) pairs, the remaining backwards; interleaved runs a
//     multiple of pp micro-batches, so its last backward is chunk 0's): steps of a rank run
//     one after another, a step starts after the messages it waits for, a message arrives
//     after its sender's step plus the link time. So with own(p) = sum_{u<p} (f_u + l_u) +
//     m * sum_c (f_{c pp + p} + b_{c pp + p}):
//        B(pp-1) = own(pp-1),  B(q) = max(own(q), B(q+1) + l_q + b_q)  <=  T_m(q).
// (b) An extended run (m > steady_state_limit) returns T(q) = T2 + r (T2 - T1), r = (m - m2)
//     / pp >= 0, from walks of m1 < m2 micro-batches. T2(q) >= B(q) with m2 by (a). And
//     T2(q) - T1(q) >= D(q), the durations of the steps rank q runs in the m2 walk after the
//     step that ends its m1 walk, when the m1 walk embeds in the m2 walk: every m1 step is an
//     m2 step (same micro-batch, chunk, rank, duration), in the same order on its rank, each
//     message it waits for is waited for in the m2 walk at or before it on that rank, and
//     each sender sends the common messages in the same order over the same links. The walk
//     is a max-plus recursion that only takes maxima and adds non-negative times, so then no
//     common step starts or ends earlier in the m2 walk (induction in step order), and T2(q)
//     >= T1(q) + D(q). extension_for() checks that embedding on the compiled schedules (once
//     per kind, pp, vpp: m1 and m2 depend on pp only) and proves nothing if it fails. So
//     T(q) >= B_m2(q) + r D(q).
namespace {
PipelineWalk::Extension compute_extension(const PipelineWalk::Program& P1,
                                          const PipelineWalk::Program& P2, int pp) {
  PipelineWalk::Extension ext;
  // m2 step index by (rank, backward, micro-batch, chunk); -1: none.
  const std::size_t per_rank = 2 * static_cast<std::size_t>(P2.m) * P2.vpp;
  std::vector<std::int32_t> in2(static_cast<std::size_t>(pp) * per_rank, -1);
  auto slot = [&](int stage, bool forward, int mb, int chunk) -> std::size_t {
    return static_cast<std::size_t>(stage) * per_rank +
           (static_cast<std::size_t>(forward ? 0 : 1) * P2.m + static_cast<std::size_t>(mb)) * P2.vpp +
           static_cast<std::size_t>(chunk);
  };
  std::vector<std::int32_t> pos2(P2.ops.size()), consumer2(P2.msgs.size(), -1), stream2(P2.msgs.size());
  std::vector<std::int32_t> count(static_cast<std::size_t>(pp), 0), sent(static_cast<std::size_t>(pp), 0);
  for (std::size_t k = 0; k < P2.ops.size(); ++k) {
    const auto& o = P2.ops[k];
    const auto& l = P2.labels[k];
    in2[slot(o.stage, l.forward, l.mb, l.chunk)] = static_cast<std::int32_t>(k);
    pos2[k] = count[static_cast<std::size_t>(o.stage)]++;
    for (std::int32_t d = o.dep_begin; d < o.dep_end; ++d) consumer2[static_cast<std::size_t>(P2.deps[d])] = static_cast<std::int32_t>(k);
  }
  for (std::size_t d = 0; d < P2.msgs.size(); ++d)
    stream2[d] = sent[static_cast<std::size_t>(P2.ops[static_cast<std::size_t>(P2.msgs[d].src_op)].stage)]++;
  auto map1 = [&](std::int32_t k1) -> std::int32_t {
    const auto& o = P1.ops[static_cast<std::size_t>(k1)];
    const auto& l = P1.labels[static_cast<std::size_t>(k1)];
    if (l.mb < 0 || l.mb >= P2.m || l.chunk < 0 || l.chunk >= P2.vpp) return -1;
    return in2[slot(o.stage, l.forward, l.mb, l.chunk)];
  };
  for (std::size_t k1 = 0; k1 < P1.ops.size(); ++k1) {
    const auto& o1 = P1.ops[k1];
    const std::int32_t k2 = map1(static_cast<std::int32_t>(k1));
    if (k2 < 0 || P2.ops[static_cast<std::size_t>(k2)].dur != o1.dur) return ext;
    if (o1.prev >= 0) {
      const std::int32_t p2 = map1(o1.prev);
      if (p2 < 0 || pos2[static_cast<std::size_t>(p2)] >= pos2[static_cast<std::size_t>(k2)]) return ext;
    }
    for (std::int32_t d = o1.dep_begin; d < o1.dep_end; ++d) {
      const auto& m1 = P1.msgs[static_cast<std::size_t>(P1.deps[d])];
      const std::int32_t src2 = map1(m1.src_op);
      if (src2 < 0) return ext;
      const std::int32_t d2 = P2.ops[static_cast<std::size_t>(src2)].out;
      if (d2 < 0 || P2.msgs[static_cast<std::size_t>(d2)].link != m1.link) return ext;
      const std::int32_t c2 = consumer2[static_cast<std::size_t>(d2)];
      if (c2 < 0 || P2.ops[static_cast<std::size_t>(c2)].stage != o1.stage ||
          pos2[static_cast<std::size_t>(c2)] > pos2[static_cast<std::size_t>(k2)])
        return ext;
    }
    if (o1.out >= 0) {
      const auto& m1 = P1.msgs[static_cast<std::size_t>(o1.out)];
      const std::int32_t d2 = P2.ops[static_cast<std::size_t>(k2)].out;
      if (d2 < 0 || P2.msgs[static_cast<std::size_t>(d2)].link != m1.link) return ext;
      if (m1.prev >= 0) {
        const std::int32_t prev_src2 = map1(P1.msgs[static_cast<std::size_t>(m1.prev)].src_op);
        if (prev_src2 < 0) return ext;
        const std::int32_t pd2 = P2.ops[static_cast<std::size_t>(prev_src2)].out;
        if (pd2 < 0 || stream2[static_cast<std::size_t>(pd2)] >= stream2[static_cast<std::size_t>(d2)]) return ext;
      }
    }
  }
  // D(q): the steps after the image of the m1 walk's last step on each rank (steps of a
  // rank appear in the compiled order in their rank order).
  std::vector<std::int32_t> last2(static_cast<std::size_t>(pp));
  for (int q = 0; q < pp; ++q) {
    last2[static_cast<std::size_t>(q)] = map1(P1.last_op[static_cast<std::size_t>(q)]);
    if (last2[static_cast<std::size_t>(q)] < 0) return ext;
  }
  ext.after.assign(static_cast<std::size_t>(pp), std::vector<std::int32_t>(2 * static_cast<std::size_t>(pp) * P2.vpp, 0));
  for (std::size_t k = 0; k < P2.ops.size(); ++k) {
    const auto q = static_cast<std::size_t>(P2.ops[k].stage);
    if (static_cast<std::int32_t>(k) > last2[q]) ++ext.after[q][static_cast<std::size_t>(P2.ops[k].dur)];
  }
  ext.proven = true;
  return ext;
}
}  // namespace

const PipelineWalk::Extension& PipelineWalk::extension_for(ScheduleKind kind, int pp, int vpp) {
  const auto key = std::make_tuple(static_cast<int>(kind), pp, vpp);
  auto it = extensions_.find(key);
  if (it != extensions_.end()) return it->second;
  // A pure function of (kind, pp, vpp): shared by every walker of the process (the search's
  // threads each have one), computed outside the lock.
  static std::mutex shared_mutex;
  static std::map<std::tuple<int, int, int>, Extension> shared;
  {
    std::lock_guard<std::mutex> lock(shared_mutex);
    auto s = shared.find(key);
    if (s != shared.end()) return extensions_.emplace(key, s->second).first->second;
  }
  const int m1 = steady_microbatches(pp), m2 = m1 + pp;
  const auto P1 = compile(kind, pp, m1, vpp), P2 = compile(kind, pp, m2, vpp);
  Extension e = compute_extension(*P1, *P2, pp);
  {
    std::lock_guard<std::mutex> lock(shared_mutex);
    shared.emplace(key, e);
  }
  return extensions_.emplace(key, std::move(e)).first->second;
}

double PipelineWalk::compute_end_bound(ScheduleKind kind, int pp, int m, int vpp,
                                       const std::vector<double>& fwd, const std::vector<double>& bwd,
                                       const std::vector<double>& link) {
  const bool ext = extends(pp, m);
  const Extension* e = nullptr;
  if (ext) {
    e = &extension_for(kind, pp, vpp);
    if (!e->proven) return 0.0;
  }
  const int mb = ext ? steady_microbatches(pp) + pp : m;
  const double rounds = ext ? static_cast<double>(m - mb) / pp : 0.0;
  auto l = [&](int p) { return pp > 1 ? link[static_cast<std::size_t>(p)] : 0.0; };
  // own(p) for every rank, then B(q) from the last rank down; the largest B + r D.
  std::vector<double> own(static_cast<std::size_t>(pp));
  double before = 0;
  for (int p = 0; p < pp; ++p) {
    double busy = 0;
    for (int c = 0; c < vpp; ++c) busy += mb * fwd[static_cast<std::size_t>(c * pp + p)] + mb * bwd[static_cast<std::size_t>(c * pp + p)];
    own[static_cast<std::size_t>(p)] = before + busy;
    before += fwd[static_cast<std::size_t>(p)] + l(p);
  }
  double best = 0, b = 0;
  for (int q = pp - 1; q >= 0; --q) {
    b = q == pp - 1 ? own[static_cast<std::size_t>(q)]
                    : std::max(own[static_cast<std::size_t>(q)], b + l(q) + bwd[static_cast<std::size_t>(q)]);
    double d = 0;
    if (ext)
      for (std::size_t i = 0; i < e->after[static_cast<std::size_t>(q)].size(); ++i)
        if (const std::int32_t n = e->after[static_cast<std::size_t>(q)][i]; n > 0)
          d += n * (i % 2 ? bwd[i / 2] : fwd[i / 2]);
    best = std::max(best, b + rounds * d);
  }
  return best;
}

double PipelineWalk::op_shift(std::size_t i) const {
  return shift_[static_cast<std::size_t>(prog_->ops[i].stage)];
}
double PipelineWalk::msg_shift(std::size_t i) const {
  return shift_[static_cast<std::size_t>(prog_->ops[static_cast<std::size_t>(prog_->msgs[i].src_op)].stage)];
}

void PipelineWalk::run(ScheduleKind kind, int pp, int m, int vpp, const std::vector<double>& fwd,
                       const std::vector<double>& bwd, const std::vector<double>& link,
                       bool every_step) {
  extended_ = false;
  chain_.clear();
  if (every_step || !extends(pp, m)) {
    walk(kind, pp, m, vpp, fwd, bwd, link);
    return;
  }
  const int m1 = steady_microbatches(pp), m2 = m1 + pp;
  walk(kind, pp, m1, vpp, fwd, bwd, link);
  const std::vector<double> end1 = compute_end;
  const std::vector<int> peak1 = peak_chunks;
  std::vector<double> chain1(static_cast<std::size_t>(pp));
  for (int s = 0; s < pp; ++s) chain1[static_cast<std::size_t>(s)] = chain_p2p(s);
  walk(kind, pp, m2, vpp, fwd, bwd, link);
  // Rounds of pp micro-batches still to add (fractional for 1F1B / GPipe, whose steady
  // state repeats every micro-batch).
  const double rounds = static_cast<double>(m - m2) / pp;
  std::vector<double> shift(static_cast<std::size_t>(pp)), chain2(static_cast<std::size_t>(pp));
  for (int s = 0; s < pp; ++s) chain2[static_cast<std::size_t>(s)] = chain_p2p(s);
  chain_.resize(static_cast<std::size_t>(pp));
  // Work of one round of pp micro-batches on each rank, and the slowest rank's: the
  // schedule ties every rank to the others within a bounded lag, so in the long run every
  // rank ends a round no faster than the slowest rank does its work. Between m1 and m2 a
  // rank can still seem faster (idle less, even negatively: the extra micro-batches fill
  // gaps of its warm-up and cool-down); extended linearly over hundreds of micro-batches
  // that ended the step short (0.7% for Qwen3-235B on tp4 pp8 vpp4) and turned idle time
  // and pp_comm negative.
  std::vector<double> work_round(static_cast<std::size_t>(pp), 0.0);
  double slowest_round = 0;
  for (int s = 0; s < pp; ++s) {
    for (int c = 0; c < vpp; ++c) work_round[static_cast<std::size_t>(s)] += pp * (fwd[c * pp + s] + bwd[c * pp + s]);
    slowest_round = std::max(slowest_round, work_round[static_cast<std::size_t>(s)]);
  }
  for (int s = 0; s < pp; ++s) {
    const auto i = static_cast<std::size_t>(s);
    chain_[i] = chain2[i] + rounds * (chain2[i] - chain1[i]);
    const double round = std::max(compute_end[i] - end1[i], slowest_round);
    shift[i] = rounds * round;
    compute_end[i] += shift[i];
    idle[i] += rounds * (round - work_round[i]);
    peak_chunks[i] += static_cast<int>(std::lround(rounds * (peak_chunks[i] - peak1[i])));
    busy_fwd[i] = busy_fwd[i] / m2 * m;
    busy_bwd[i] = busy_bwd[i] / m2 * m;
  }
  shift_ = std::move(shift);
  m_ = m;
  extended_ = true;
}

void PipelineWalk::walk(ScheduleKind kind, int pp, int m, int vpp, const std::vector<double>& fwd,
                        const std::vector<double>& bwd, const std::vector<double>& link) {
  STRATA_CHECK(static_cast<int>(fwd.size()) == pp * vpp &&
                   static_cast<int>(bwd.size()) == pp * vpp,
               "pipeline walk: {} / {} stage times for pp {} x vpp {}", fwd.size(), bwd.size(),
               pp, vpp);
  STRATA_CHECK(pp == 1 || static_cast<int>(link.size()) == pp,
               "pipeline walk: {} links for pp {}", link.size(), pp);
  valid_ = false;
  prog_.reset();
  for (const auto& p : cache_)
    if (p->kind == kind && p->pp == pp && p->m == m && p->vpp == vpp) prog_ = p;
  if (!prog_) {
    prog_ = compile(kind, pp, m, vpp);
    if (cache_.size() >= kProgramCacheSize) cache_.erase(cache_.begin());
    cache_.push_back(prog_);
  }
  kind_ = kind;
  pp_ = pp;
  m_ = m;
  vpp_ = vpp;
  fwd_ = fwd;
  bwd_ = bwd;
  link_ = link;

  const Program& P = *prog_;
  const std::size_t nops = P.ops.size(), nmsgs = P.msgs.size();
  dur_.resize(2 * static_cast<std::size_t>(pp) * vpp);
  for (int v = 0; v < pp * vpp; ++v) {
    dur_[2 * v] = fwd[v];
    dur_[2 * v + 1] = bwd[v];
  }
  start_.resize(nops);
  end_.resize(nops);
  waited_.resize(nops);
  msg_start_.resize(nmsgs);
  msg_end_.resize(nmsgs);
  idle.assign(pp, 0.0);

  const OpInfo* ops = P.ops.data();
  const std::int32_t* deps = P.deps.data();
  const MsgInfo* msgs = P.msgs.data();
  const double* dur = dur_.data();
  const double* lk = link.data();
  double* start = start_.data();
  double* end = end_.data();
  double* mstart = msg_start_.data();
  double* mend = msg_end_.data();
  std::int32_t* waited = waited_.data();
  double* idl = idle.data();
  for (std::size_t k = 0; k < nops; ++k) {
    const OpInfo& o = ops[k];
    double t = o.prev >= 0 ? end[o.prev] : 0.0;
    const double ready = t;
    std::int32_t w = -1;
    for (std::int32_t d = o.dep_begin; d < o.dep_end; ++d) {
      const double a = mend[deps[d]];
      if (a > t) {
        t = a;
        w = deps[d];
      }
    }
    idl[o.stage] += t - ready;
    const double e = t + dur[o.dur];
    start[k] = t;
    end[k] = e;
    waited[k] = w;
    if (o.out >= 0) {
      const MsgInfo& mi = msgs[o.out];
      double st = e;
      if (mi.prev >= 0 && mend[mi.prev] > st) st = mend[mi.prev];
      mstart[o.out] = st;
      mend[o.out] = st + lk[mi.link];
    }
  }

  compute_end.assign(pp, 0.0);
  busy_fwd.assign(pp, 0.0);
  busy_bwd.assign(pp, 0.0);
  for (int s = 0; s < pp; ++s) {
    if (P.last_op[s] >= 0) compute_end[s] = end[P.last_op[s]];
    for (int c = 0; c < vpp; ++c) {
      busy_fwd[s] += m * fwd[c * pp + s];
      busy_bwd[s] += m * bwd[c * pp + s];
    }
  }
  peak_chunks = P.peak_chunks;
  valid_ = true;
}

double PipelineWalk::chain_p2p(int s) const {
  if (!chain_.empty()) return chain_[static_cast<std::size_t>(s)];
  const Program& P = *prog_;
  double p2p = 0;
  std::int32_t k = P.last_op[s];
  while (k >= 0) {
    const OpInfo& o = P.ops[k];
    if (waited_[k] >= 0) {
      const MsgInfo& mi = P.msgs[waited_[k]];
      p2p += msg_end_[waited_[k]] - end_[mi.src_op];
      k = mi.src_op;
    } else {
      k = o.prev;
    }
  }
  return p2p;
}

int PipelineWalk::last_backward(int stage, int chunk) const {
  return prog_->last_bwd[stage][chunk];
}
std::size_t PipelineWalk::num_ops() const { return prog_ ? prog_->ops.size() : 0; }
const PipelineWalk::OpInfo& PipelineWalk::op(std::size_t i) const { return prog_->ops[i]; }
const PipelineWalk::OpLabel& PipelineWalk::label(std::size_t i) const { return prog_->labels[i]; }
std::size_t PipelineWalk::num_msgs() const { return prog_ ? prog_->msgs.size() : 0; }
const PipelineWalk::MsgInfo& PipelineWalk::msg(std::size_t i) const { return prog_->msgs[i]; }

}  // namespace strata::planner::detail
