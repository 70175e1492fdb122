// Hand-made report data for the rendering tests: three strategies of a made-up model,
// one over memory, with a hand-built 1F1B timeline (pp = 2, 4 micro-batches).
#pragma once
#include "report/report_data.h"

namespace strata::report::testing {

// 1F1B on 2 stages with forward tf and backward tb = 2·tf, p2p and DP sync by hand:
// stage 0: F0 F1 B0 F2 B1 F3 B2 B3; stage 1: F0 B0 F1 B1 F2 B2 F3 B3.
inline std::vector<planner::TimelineEvent> hand_timeline(double tf) {
  std::vector<planner::TimelineEvent> ev;
  const double tb = 2 * tf;
  auto add = [&](int stage, const char* stream, std::string name, int mb, double s, double e) {
    planner::TimelineEvent t;
    t.stage = stage;
    t.stream = stream;
    t.name = std::move(name);
    t.microbatch = mb;
    t.start_s = s;
    t.end_s = e;
    ev.push_back(t);
  };
  // Stage 1 runs F m then B m back to back; stage 0 keeps 2 in flight.
  double t0 = 0;
  add(0, "compute", "F m0 c0", 0, t0, t0 + tf);
  add(0, "compute", "F m1 c0", 1, t0 + tf, t0 + 2 * tf);
  add(0, "pp_comm", "send act m0", 0, t0 + tf, t0 + tf * 1.1);
  double t1 = tf * 1.1;
  for (int m = 0; m < 4; ++m) {
    add(1, "compute", "F m" + std::to_string(m) + " c0", m, t1, t1 + tf);
    add(1, "compute", "B m" + std::to_string(m) + " c0", m, t1 + tf, t1 + tf + tb);
    add(1, "pp_comm", "send grad m" + std::to_string(m), m, t1 + tf + tb, t1 + tf + tb + 0.1 * tf);
    t1 += tf + tb;
  }
  double s0 = 2 * tf + 0.1 * tf + tf + tb;  // B0 on stage 0 after stage 1 returns grad 0
  for (int m = 0; m < 4; ++m) {
    add(0, "compute", "B m" + std::to_string(m) + " c0", m, s0, s0 + tb);
    if (m + 2 < 4) add(0, "compute", "F m" + std::to_string(m + 2) + " c0", m + 2, s0 + tb, s0 + tb + tf);
    s0 += tf + tb;
  }
  add(0, "dp_comm", "allreduce bucket 0", -1, s0 - tb, s0 + 0.5 * tf);
  add(1, "dp_comm", "allreduce bucket 0", -1, t1 - tb, t1 + 0.5 * tf);
  const double end = std::max(s0, t1) + 0.5 * tf;
  add(0, "optimizer", "adamw", -1, end, end + 0.2 * tf);
  add(1, "optimizer", "adamw", -1, end, end + 0.2 * tf);
  return ev;
}

inline ReportEntry make_entry(int tp, int pp, int dp, double iteration_s, double mem_gib, bool fits) {
  ReportEntry e;
  e.strategy.tp = tp;
  e.strategy.pp = pp;
  e.strategy.dp = dp;
  e.strategy.micro_batch = 1;
  e.strategy.global_batch = 64;
  auto& p = e.prediction;
  p.iteration_s = iteration_s;
  p.tokens_per_s = 64 * 2048 / iteration_s;
  p.model_tflops_per_gpu = 150;
  p.hardware_tflops_per_gpu = 160;
  p.mfu = 0.48;
  p.peak_memory_gib = mem_gib;
  for (int s = 0; s < pp; ++s) p.stage_memory_gib.push_back(mem_gib - s * 2.0);
  p.bubble_fraction = pp > 1 ? 0.1 : 0.0;
  p.breakdown_s.tp_comm = tp > 1 ? 0.1 * iteration_s : 0;
  p.breakdown_s.pp_comm = pp > 1 ? 0.05 * iteration_s : 0;
  p.breakdown_s.dp_comm = 0.05 * iteration_s;
  p.breakdown_s.optimizer = 0.01 * iteration_s;
  p.breakdown_s.bubble = pp > 1 ? 0.09 * iteration_s : 0;
  // Compute is the rest, so the breakdown sums to the iteration.
  p.breakdown_s.compute = iteration_s - p.breakdown_s.tp_comm - p.breakdown_s.pp_comm - p.breakdown_s.dp_comm -
                          p.breakdown_s.optimizer - p.breakdown_s.bubble;
  p.fits_memory = fits;
  p.notes = {"GEMM times from datasheet roofline"};
  return e;
}

inline ReportData make_report() {
  ReportData d;
  d.model = "toy-<1b>";
  d.cluster = "dgx-a100";
  d.device = "a100-sxm-80gb";
  d.device_memory_gib = 80;
  d.device_reserve_gib = 4;
  d.gpus = 16;
  d.seq_len = 2048;
  d.origin = "hand-made";
  d.entries.push_back(make_entry(8, 2, 1, 1.20, 60, true));   // best that fits
  d.entries.push_back(make_entry(4, 1, 4, 1.50, 70, true));
  d.entries.push_back(make_entry(1, 1, 16, 0.90, 95, false)); // fastest, but over memory
  d.entries[0].timeline = hand_timeline(0.05);
  d.entries[1].timeline = hand_timeline(0.06);
  return d;
}

}  // namespace strata::report::testing
