// Ranking check on the configuration sweeps of Narayanan et al. 2021 (Figures 11-16 and 18,
// bench/validation/narayanan-2021-extra.yaml, copied from ../shared/validation). Their
// throughputs are read from figures by eye (status F, +-5 to 10 TFLOP/s): they check the
// ranking, not absolute error. For every group of points that differ only in the swept
// setting (same sweep, global batch and scatter/gather flag), the point the paper measured
// fastest must be predicted fastest or within 3% of the predicted best.
//
//   strata_bench_prediction_ranking [path] [stack]
//
// Models: GPT (4h MLP, tied embeddings, vocabulary 51200, sequence 2048) with the point's
// layers / hidden / heads; full recompute and fp16 as the file states; vpp null = 1.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "bench/bench_main.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "planner/simulator.h"
#include "strata_build_commit.h"  // STRATA_GIT_COMMIT, written at build time

namespace {

struct Point {
  std::string sweep;
  int layers, hidden, heads, tp, pp, dp, vpp;
  std::int64_t mbs, gbs;
  double tflops;
  double pred_s = 0;
  double pred_tflops = 0;  // paper's FLOP count / (gpus x predicted step)
};

int run(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1]
                                    : std::string(STRATA_SOURCE_DIR) + "/bench/validation/narayanan-2021-extra.yaml";
  const std::string stack_name = argc > 2 ? argv[2] : "megatron-2021";
  const YAML::Node doc = YAML::LoadFile(path);
  const auto cluster = strata::bench::bench_cluster(strata::costmodel::load_cluster(doc["cluster"].as<std::string>()));
  const auto stack = strata::costmodel::load_software_stack(stack_name);
  const std::int64_t seq = doc["seq_len"].as<std::int64_t>(), vocab = doc["vocab"].as<std::int64_t>();
  std::map<std::tuple<std::string, std::int64_t, int>, std::vector<Point>> groups;
  for (const auto& n : doc["points"]) {
    Point p;
    p.sweep = n["sweep"].as<std::string>();
    p.layers = n["layers"].as<int>(), p.hidden = n["hidden"].as<int>(), p.heads = n["heads"].as<int>();
    p.tp = n["tp"].as<int>(), p.pp = n["pp"].as<int>(), p.dp = n["dp"].as<int>();
    p.vpp = n["vpp"] && !n["vpp"].IsNull() ? n["vpp"].as<int>() : 1;
    p.mbs = n["micro_batch"].as<std::int64_t>(), p.gbs = n["global_batch"].as<std::int64_t>();
    p.tflops = n["tflops_per_gpu"].as<double>();
    const int sg = n["scatter_gather"] ? (n["scatter_gather"].as<bool>() ? 1 : 0) : -1;
    groups[{p.sweep, p.gbs, sg}].push_back(p);
  }
  fmt::print("# strata bench prediction_ranking: is the measured-best configuration predicted best?\n");
  fmt::print("# strata {} commit {}; published {} ({}); cluster {}, stack {}\n", STRATA_VERSION, STRATA_GIT_COMMIT,
             doc["source"].as<std::string>(), path, cluster.name, stack.name);
  fmt::print("# throughputs are read from figures (+-5-10 TFLOP/s): ranking only; 'ok' = the measured best is\n"
             "# predicted best or within 3% of the predicted best throughput\n#\n");
  int groups_n = 0, ok_n = 0;
  for (auto& [key, pts] : groups) {
    if (pts.size() < 2) continue;
    for (auto& p : pts) {
      strata::models::ModelSpec m;
      m.name = fmt::format("{}-l{}-h{}", p.sweep, p.layers, p.hidden);
      m.layers = p.layers, m.hidden = p.hidden, m.heads = p.heads, m.kv_heads = p.heads;
      m.ffn = 4 * p.hidden, m.vocab = vocab, m.seq_len = seq;
      strata::planner::Strategy s;
      s.tp = p.tp, s.pp = p.pp, s.dp = p.dp, s.vpp = p.vpp, s.micro_batch = p.mbs, s.global_batch = p.gbs;
      s.recompute = strata::planner::Recompute::Full;
      s.schedule = p.vpp > 1 ? strata::planner::ScheduleKind::Interleaved : strata::planner::ScheduleKind::OneFOneB;
      strata::planner::SimulateOptions o;
      o.stack = &stack;
      p.pred_s = strata::planner::simulate(m, cluster, s, o).prediction.iteration_s;
      const double B = static_cast<double>(p.gbs), sl = static_cast<double>(seq), l = p.layers, h = p.hidden,
                   V = static_cast<double>(vocab);
      const double F = 96.0 * B * sl * l * h * h * (1.0 + sl / (6.0 * h) + V / (16.0 * l * h));
      p.pred_tflops = F / (static_cast<double>(p.tp) * p.pp * p.dp * p.pred_s) / 1e12;
    }
    // Throughput with the paper's FLOP count, so Figure 11's weak scaling (3 layers per
    // stage) compares like the figure does.
    const auto measured_best = std::max_element(pts.begin(), pts.end(), [](const Point& a, const Point& b) {
      return a.tflops < b.tflops;
    });
    const auto predicted_best = std::max_element(pts.begin(), pts.end(), [](const Point& a, const Point& b) {
      return a.pred_tflops < b.pred_tflops;
    });
    const double gap = predicted_best->pred_tflops / measured_best->pred_tflops - 1;
    const bool ok = gap <= 0.03;
    ++groups_n, ok_n += ok;
    fmt::print("  {} GBS {:>4}{}: measured best tp{} pp{} dp{} vpp{} mbs{} ({} TFLOP/s); predicted best tp{} pp{} "
               "dp{} vpp{} mbs{}; gap {:+.1f}% {}\n",
               std::get<0>(key), std::get<1>(key),
               std::get<2>(key) < 0 ? "" : (std::get<2>(key) ? " s/g on" : " s/g off"), measured_best->tp,
               measured_best->pp, measured_best->dp, measured_best->vpp, measured_best->mbs, measured_best->tflops,
               predicted_best->tp, predicted_best->pp, predicted_best->dp, predicted_best->vpp, predicted_best->mbs,
               100 * gap, ok ? "ok" : "MISS");
  }
  fmt::print("# groups: {}, measured best predicted best or within 3%: {}\n", groups_n, ok_n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return strata::bench::bench_main(run, argc, argv); }
