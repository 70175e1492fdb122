// Pipeline schedules: structure (every micro-batch forward before backward, counts, warm-up,
// in-flight), pairing of sends and receives across ranks, deadlock freedom under blocking
// rendezvous send/recv, and the makespan against the closed forms of GPipe / 1F1B /
// interleaved 1F1B (Narayanan et al. 2021: bubble (p-1)/(v*m)) on uniform stages.
#include "planner/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "common/errors.h"

using namespace strata::planner;

namespace {

struct Case {
  ScheduleKind kind;
  int pp, m, vpp;
};

std::string name(const Case& c) {
  return std::string(to_string(c.kind)) + " pp=" + std::to_string(c.pp) +
         " m=" + std::to_string(c.m) + " vpp=" + std::to_string(c.vpp);
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (int pp = 1; pp <= 8; ++pp)
    for (int m = 1; m <= 12; ++m) {
      cases.push_back({ScheduleKind::GPipe, pp, m, 1});
      cases.push_back({ScheduleKind::OneFOneB, pp, m, 1});
      if (pp > 1 && m % pp == 0)
        for (int v = 2; v <= 4; ++v) cases.push_back({ScheduleKind::Interleaved, pp, m, v});
    }
  cases.push_back({ScheduleKind::OneFOneB, 16, 64, 1});
  cases.push_back({ScheduleKind::Interleaved, 16, 64, 3});
  cases.push_back({ScheduleKind::Interleaved, 7, 21, 5});
  return cases;
}

std::vector<std::vector<ScheduleStep>> lists(const Case& c) {
  std::vector<std::vector<ScheduleStep>> out;
  for (int s = 0; s < c.pp; ++s) out.push_back(build_schedule(c.kind, c.pp, s, c.m, c.vpp));
  return out;
}

// Virtual stage on the other end of a transfer step taken on (stage, step.chunk).
int peer_virtual(int pp, int stage, const ScheduleStep& st) {
  const int v = virtual_stage(pp, stage, st.chunk);
  const bool towards_next = st.kind == StepKind::SendActivation || st.kind == StepKind::RecvGrad;
  return towards_next ? v + 1 : v - 1;
}

StepKind partner_kind(StepKind k) {
  switch (k) {
    case StepKind::SendActivation: return StepKind::RecvActivation;
    case StepKind::RecvActivation: return StepKind::SendActivation;
    case StepKind::SendGrad: return StepKind::RecvGrad;
    case StepKind::RecvGrad: return StepKind::SendGrad;
    default: return k;
  }
}

// True when step `a` on rank sa and step `b` on rank sb are the two ends of one transfer.
bool pairs_with(int pp, int sa, const ScheduleStep& a, int sb, const ScheduleStep& b) {
  return b.kind == partner_kind(a.kind) && a.peer_stage == sb && b.peer_stage == sa &&
         a.microbatch == b.microbatch && peer_virtual(pp, sa, a) == virtual_stage(pp, sb, b.chunk) &&
         peer_virtual(pp, sb, b) == virtual_stage(pp, sa, a.chunk);
}

struct RunResult {
  bool deadlock = false;
  double makespan = 0;
};

// Executes all ranks' lists with blocking rendezvous semantics: a compute step takes its
// time; a send or receive runs only when the peer rank's next step is its partner, and then
// both finish at max(clock_a, clock_b) + comm_s.
RunResult execute(const std::vector<std::vector<ScheduleStep>>& ls, int pp, double tf, double tb,
                  double comm_s = 0, bool eager = false) {
  std::vector<std::size_t> idx(pp, 0);
  std::vector<double> clock(pp, 0);
  std::map<std::pair<int, int>, std::vector<std::pair<ScheduleStep, double>>> sent;
  std::map<std::pair<int, int>, std::size_t> taken;
  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < pp; ++s) {
      while (idx[s] < ls[s].size()) {
        const ScheduleStep& st = ls[s][idx[s]];
        if (is_compute(st.kind)) {
          clock[s] += st.kind == StepKind::Forward ? tf : tb;
          ++idx[s];
          progress = true;
          continue;
        }
        const int p = st.peer_stage;
        if (eager) {
          // Sends never wait; a receive waits for the k-th send from its peer.
          if (is_send(st.kind)) {
            sent[{s, p}].push_back({st, clock[s] + comm_s});
            ++idx[s];
            progress = true;
            continue;
          }
          auto& q = sent[{p, s}];
          std::size_t& k = taken[{p, s}];
          if (k >= q.size()) break;
          if (!pairs_with(pp, p, q[k].first, s, st)) break;
          clock[s] = std::max(clock[s], q[k].second);
          ++k;
          ++idx[s];
          progress = true;
          continue;
        }
        if (p < 0 || p >= pp || idx[p] >= ls[p].size()) break;
        if (!pairs_with(pp, s, st, p, ls[p][idx[p]])) break;
        const double t = std::max(clock[s], clock[p]) + comm_s;
        clock[s] = clock[p] = t;
        ++idx[s];
        ++idx[p];
        progress = true;
      }
    }
  }
  RunResult r;
  for (int s = 0; s < pp; ++s) {
    if (idx[s] != ls[s].size()) r.deadlock = true;
    r.makespan = std::max(r.makespan, clock[s]);
  }
  return r;
}

}  // namespace

TEST(Schedule, EveryChunkRunsEachMicrobatchForwardThenBackwardOnce) {
  for (const Case& c : all_cases()) {
    auto ls = lists(c);
    for (int s = 0; s < c.pp; ++s) {
      std::map<std::pair<int, int>, int> fwd_pos, bwd_pos;
      int nf = 0, nb = 0;
      for (int i = 0; i < static_cast<int>(ls[s].size()); ++i) {
        const auto& st = ls[s][i];
        ASSERT_GE(st.chunk, 0) << name(c);
        ASSERT_LT(st.chunk, c.vpp) << name(c);
        ASSERT_GE(st.microbatch, 0) << name(c);
        ASSERT_LT(st.microbatch, c.m) << name(c);
        if (st.kind == StepKind::Forward) {
          ++nf;
          EXPECT_TRUE(fwd_pos.emplace(std::pair{st.microbatch, st.chunk}, i).second) << name(c);
        } else if (st.kind == StepKind::Backward) {
          ++nb;
          EXPECT_TRUE(bwd_pos.emplace(std::pair{st.microbatch, st.chunk}, i).second) << name(c);
        }
      }
      EXPECT_EQ(nf, c.m * c.vpp) << name(c) << " stage " << s;
      EXPECT_EQ(nb, c.m * c.vpp) << name(c) << " stage " << s;
      for (const auto& [key, f] : fwd_pos) {
        ASSERT_TRUE(bwd_pos.count(key)) << name(c);
        EXPECT_LT(f, bwd_pos[key]) << name(c) << " stage " << s << " mb " << key.first;
      }
    }
  }
}

TEST(Schedule, EachComputeReceivesBeforeAndSendsRightAfter) {
  for (const Case& c : all_cases()) {
    auto ls = lists(c);
    const int nv = c.pp * c.vpp;
    for (int s = 0; s < c.pp; ++s) {
      const auto& l = ls[s];
      for (int i = 0; i < static_cast<int>(l.size()); ++i) {
        if (!is_compute(l[i].kind)) continue;
        const int v = virtual_stage(c.pp, s, l[i].chunk);
        const bool fwd = l[i].kind == StepKind::Forward;
        const bool needs_recv = fwd ? v > 0 : v < nv - 1;
        const bool needs_send = fwd ? v < nv - 1 : v > 0;
        const StepKind rk = fwd ? StepKind::RecvActivation : StepKind::RecvGrad;
        const StepKind sk = fwd ? StepKind::SendActivation : StepKind::SendGrad;
        int found_recv = 0, found_send = 0, recv_after = 0;
        // A receive may be posted early (interleaved), but always before its compute.
        for (int j = 0; j < i; ++j)
          found_recv += l[j].kind == rk && l[j].microbatch == l[i].microbatch &&
                        l[j].chunk == l[i].chunk;
        for (int j = i + 1; j < static_cast<int>(l.size()); ++j)
          recv_after += l[j].kind == rk && l[j].microbatch == l[i].microbatch &&
                        l[j].chunk == l[i].chunk;
        // A send goes out in the gap right after the compute that produced it.
        for (int j = i + 1; j < static_cast<int>(l.size()) && !is_compute(l[j].kind); ++j)
          found_send += l[j].kind == sk && l[j].microbatch == l[i].microbatch &&
                        l[j].chunk == l[i].chunk;
        EXPECT_EQ(found_recv, needs_recv ? 1 : 0) << name(c) << " stage " << s << " step " << i;
        EXPECT_EQ(recv_after, 0) << name(c) << " stage " << s << " step " << i;
        EXPECT_EQ(found_send, needs_send ? 1 : 0) << name(c) << " stage " << s << " step " << i;
      }
    }
  }
}

TEST(Schedule, NonInterleavedReceivesSitInTheGapRightBeforeTheirCompute) {
  for (const Case& c : all_cases()) {
    if (c.kind == ScheduleKind::Interleaved) continue;
    auto ls = lists(c);
    for (int s = 0; s < c.pp; ++s) {
      const auto& l = ls[s];
      for (int i = 0; i < static_cast<int>(l.size()); ++i) {
        if (!is_recv(l[i].kind)) continue;
        int j = i + 1;
        while (j < static_cast<int>(l.size()) && !is_compute(l[j].kind)) ++j;
        ASSERT_LT(j, static_cast<int>(l.size())) << name(c);
        EXPECT_EQ(l[j].microbatch, l[i].microbatch) << name(c) << " stage " << s << " step " << i;
        EXPECT_EQ(l[j].kind == StepKind::Forward, l[i].kind == StepKind::RecvActivation) << name(c);
      }
    }
  }
}

TEST(Schedule, OneFOneBWarmupAndPeakInFlight) {
  for (int pp = 1; pp <= 8; ++pp)
    for (int m = 1; m <= 12; ++m)
      for (int s = 0; s < pp; ++s) {
        auto l = build_schedule(ScheduleKind::OneFOneB, pp, s, m);
        int before_first_backward = 0, alive = 0, peak = 0;
        bool seen_backward = false;
        for (const auto& st : l) {
          if (st.kind == StepKind::Forward) {
            if (!seen_backward) ++before_first_backward;
            peak = std::max(peak, ++alive);
          } else if (st.kind == StepKind::Backward) {
            seen_backward = true;
            --alive;
          }
        }
        // Warm-up forwards pp - stage - 1, then the first steady forward.
        EXPECT_EQ(before_first_backward, std::min(pp - s - 1, m) + (m > pp - s - 1 ? 1 : 0))
            << "pp " << pp << " m " << m << " stage " << s;
        EXPECT_EQ(warmup_forwards(ScheduleKind::OneFOneB, pp, s, m), std::min(pp - s - 1, m));
        EXPECT_EQ(peak, std::min(pp - s, m));
        EXPECT_EQ(peak_in_flight(ScheduleKind::OneFOneB, pp, s, m), std::min(pp - s, m));
        EXPECT_EQ(peak_in_flight(ScheduleKind::GPipe, pp, s, m), m);
      }
}

TEST(Schedule, InterleavedPeakInFlightCountsChunks) {
  // Stage 0 of pp=4, vpp=2, m=8: warm-up (4-1)*2 + (2-1)*4 = 10 chunk-forwards, then one
  // more forward before the first backward: 11 chunk activations = 6 stage-equivalents.
  EXPECT_EQ(warmup_forwards(ScheduleKind::Interleaved, 4, 0, 8, 2), 10);
  EXPECT_EQ(peak_chunks_in_flight(ScheduleKind::Interleaved, 4, 0, 8, 2), 11);
  EXPECT_EQ(peak_in_flight(ScheduleKind::Interleaved, 4, 0, 8, 2), 6);
  // Last stage: (vpp-1)*pp = 4 warm-up.
  EXPECT_EQ(warmup_forwards(ScheduleKind::Interleaved, 4, 3, 8, 2), 4);
  EXPECT_EQ(peak_chunks_in_flight(ScheduleKind::Interleaved, 4, 3, 8, 2), 5);
}

TEST(Schedule, SendsAndReceivesPairUpInOrderAcrossRanks) {
  for (const Case& c : all_cases()) {
    auto ls = lists(c);
    // k-th send from a to b must match the k-th receive on b from a.
    std::map<std::pair<int, int>, std::vector<ScheduleStep>> sends, recvs;
    for (int s = 0; s < c.pp; ++s)
      for (const auto& st : ls[s]) {
        if (is_send(st.kind)) sends[{s, st.peer_stage}].push_back(st);
        if (is_recv(st.kind)) recvs[{st.peer_stage, s}].push_back(st);
      }
    for (const auto& [ab, sv] : sends) {
      const auto& rv = recvs[ab];
      ASSERT_EQ(sv.size(), rv.size()) << name(c) << " " << ab.first << "->" << ab.second;
      for (std::size_t k = 0; k < sv.size(); ++k)
        EXPECT_TRUE(pairs_with(c.pp, ab.first, sv[k], ab.second, rv[k]))
            << name(c) << " " << ab.first << "->" << ab.second << " #" << k;
    }
    for (const auto& [ab, rv] : recvs) EXPECT_EQ(sends[ab].size(), rv.size()) << name(c);
    if (c.pp == 1) {
      for (const auto& st : ls[0]) EXPECT_TRUE(is_compute(st.kind)) << name(c);
    }
  }
}

TEST(Schedule, BlockingWalkersNeverDeadlock) {
  for (const Case& c : all_cases()) {
    auto ls = lists(c);
    // Several time ratios: the order of steps must not rely on timing. Both rendezvous
    // sends (MPI_Ssend) and eager sends (MPI_Isend, receives block) must complete.
    for (auto [tf, tb] : {std::pair{1.0, 2.0}, std::pair{1.0, 1.0}, std::pair{3.0, 1.0}}) {
      EXPECT_FALSE(execute(ls, c.pp, tf, tb, 0.25).deadlock) << name(c);
      EXPECT_FALSE(execute(ls, c.pp, tf, tb, 0.25, /*eager=*/true).deadlock) << name(c);
    }
  }
}

TEST(Schedule, WalkerDetectsAMisorderedExchange) {
  // The in-test walker must be able to fail: on the last rank of a 1F1B pipeline the
  // steady-state exchange is "receive activation, send gradient" (its neighbour sends
  // first); putting the send first makes both neighbours wait to send.
  auto ls = lists({ScheduleKind::OneFOneB, 2, 4, 1});
  auto& last = ls[1];
  auto rit = std::adjacent_find(last.begin(), last.end(), [](auto& a, auto& b) {
    return is_recv(a.kind) && is_send(b.kind);
  });
  ASSERT_NE(rit, last.end());
  auto it = rit + 1;
  ASSERT_FALSE(execute(ls, 2, 1, 2).deadlock);
  std::iter_swap(it, rit);
  EXPECT_TRUE(execute(ls, 2, 1, 2).deadlock);
}

TEST(Schedule, UniformMakespanMatchesClosedForms) {
  for (const Case& c : all_cases()) {
    auto ls = lists(c);
    for (auto [tf, tb] : {std::pair{1.0, 2.0}, std::pair{1.0, 1.0}}) {
      // Per-chunk times: a chunk holds 1/vpp of the stage's layers.
      const double tfc = tf / c.vpp, tbc = tb / c.vpp;
      if (c.kind == ScheduleKind::Interleaved) {
        // Ideal m*(tf+tb) plus the bubble (p-1)/(v*m) of it (Narayanan et al. 2021, sec. 2.2.2),
        // with eager sends (the timing model of the simulator and the runtime).
        const double expected = c.m * (tf + tb) * (1.0 + double(c.pp - 1) / (c.vpp * c.m));
        RunResult eager = execute(ls, c.pp, tfc, tbc, 0, true);
        ASSERT_FALSE(eager.deadlock) << name(c);
        EXPECT_NEAR(eager.makespan, expected, 1e-9) << name(c) << " tf " << tf << " tb " << tb;
        // Rendezvous sends serialise the ranks more; never faster than the bound.
        EXPECT_GE(execute(ls, c.pp, tfc, tbc).makespan, expected - 1e-9) << name(c);
      } else {
        const double expected = (c.m + c.pp - 1) * (tf + tb);
        for (bool eager : {false, true}) {
          RunResult r = execute(ls, c.pp, tfc, tbc, 0, eager);
          ASSERT_FALSE(r.deadlock) << name(c);
          EXPECT_NEAR(r.makespan, expected, 1e-9)
              << name(c) << " tf " << tf << " tb " << tb << " eager " << eager;
        }
      }
    }
  }
}

TEST(Schedule, InterleavingShrinksTheBubble) {
  // Same work, pp=4, m=8: 1F1B bubble (p-1)/m, interleaved vpp=2 half of it.
  auto f = lists({ScheduleKind::OneFOneB, 4, 8, 1});
  auto i = lists({ScheduleKind::Interleaved, 4, 8, 2});
  const double t1 = execute(f, 4, 1, 2, 0, true).makespan;
  const double t2 = execute(i, 4, 0.5, 1, 0, true).makespan;
  EXPECT_NEAR(t1 / (8 * 3.0) - 1, 3.0 / 8, 1e-12);
  EXPECT_NEAR(t2 / (8 * 3.0) - 1, 3.0 / 16, 1e-12);
}

TEST(Schedule, RejectsBadArguments) {
  EXPECT_THROW(build_schedule(ScheduleKind::OneFOneB, 0, 0, 4), strata::InputError);
  EXPECT_THROW(build_schedule(ScheduleKind::OneFOneB, 4, 4, 4), strata::InputError);
  EXPECT_THROW(build_schedule(ScheduleKind::OneFOneB, 4, 0, 0), strata::InputError);
  EXPECT_THROW(build_schedule(ScheduleKind::OneFOneB, 4, 0, 4, 2), strata::InputError);
  EXPECT_THROW(build_schedule(ScheduleKind::Interleaved, 4, 0, 6, 2), strata::InputError);
  EXPECT_THROW(build_schedule(ScheduleKind::Interleaved, 4, 0, 8, 1), strata::InputError);
  EXPECT_THROW(build_schedule(ScheduleKind::Interleaved, 1, 0, 8, 2), strata::InputError);
}

TEST(Schedule, StepKindNames) {
  EXPECT_STREQ(to_string(StepKind::SendActivation), "send_activation");
  EXPECT_STREQ(to_string(StepKind::RecvGrad), "recv_grad");
}
