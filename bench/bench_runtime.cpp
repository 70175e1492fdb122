// Throughput of the CPU training runtime: `strata train` under mpirun for each 2-rank
// layout (and one rank for reference) on a small GPT, with the share of each step spent
// in GEMMs (OpenBLAS sgemm, one thread per rank). Figures only; never pass/fail.
//
//   strata_bench_runtime [--steps N] [--quick]
//
// Reported per layout: median over the steps after 2 warm-up steps of the step time
// (rank 0's wall clock; every step ends in a world all-reduce, so it is the job's time),
// tokens/s, rank 0's GEMM time and share, and its wait for the DP gradient reduction
// after the backward pass (the dp2 rows with 1M-parameter buckets compare the reduction
// overlapped with the backward pass against the same buckets reduced after it).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/json_text.h"
#include "planner/plan.h"
#include "strata_build_commit.h"  // STRATA_GIT_COMMIT, written at build time

namespace fs = std::filesystem;
using strata::planner::Plan;
using strata::planner::ScheduleKind;

namespace {

struct Layout {
  std::string name;
  int dp = 1, tp = 1, pp = 1, vpp = 1, zero = 0;
  bool sp = false;
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  strata::planner::Recompute recompute = strata::planner::Recompute::None;
  std::string train_args = {};  // extra `strata train` flags
};

strata::models::ModelSpec bench_model() {
  return {.name = "bench-gpt-8m", .layers = 4, .hidden = 256, .heads = 8, .kv_heads = 8, .ffn = 1024,
          .vocab = 4096, .seq_len = 128, .activation = strata::models::Activation::Gelu,
          .norm = strata::models::Norm::LayerNorm, .positions = strata::models::Positions::Learned,
          .tied_embeddings = true, .mla = {}, .moe = {}};
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc) steps = std::max(3, std::atoi(argv[++i]));
    else if (a == "--quick") steps = 4;
    else {
      std::fprintf(stderr, "error: unknown argument '%s' (expected --steps N or --quick)\n", a.c_str());
      return 2;
    }
  }
  const std::int64_t micro_batch = 2, global_batch = 16;
  const std::vector<Layout> layouts = {
      {"1 rank", 1, 1, 1},
      {"dp2", 2, 1, 1},
      {"dp2 zero1", 2, 1, 1, 1, 1},
      // DP reduction in 1M-parameter buckets (the default bucket holds this whole model),
      // started during the backward pass or after it.
      {"dp2 b1M overlap", 2, 1, 1, 1, 0, false, ScheduleKind::OneFOneB, strata::planner::Recompute::None,
       "--grad-bucket-params 1000000"},
      {"dp2 b1M after", 2, 1, 1, 1, 0, false, ScheduleKind::OneFOneB, strata::planner::Recompute::None,
       "--grad-bucket-params 1000000 --no-overlap-grad-reduce"},
      {"zero1 b1M overlap", 2, 1, 1, 1, 1, false, ScheduleKind::OneFOneB, strata::planner::Recompute::None,
       "--grad-bucket-params 1000000"},
      {"zero1 b1M after", 2, 1, 1, 1, 1, false, ScheduleKind::OneFOneB, strata::planner::Recompute::None,
       "--grad-bucket-params 1000000 --no-overlap-grad-reduce"},
      {"tp2", 1, 2, 1},
      {"tp2 sp", 1, 2, 1, 1, 0, true},
      {"pp2 1f1b", 1, 1, 2},
      {"pp2 gpipe", 1, 1, 2, 1, 0, false, ScheduleKind::GPipe},
      {"pp2 vpp2", 1, 1, 2, 2, 0, false, ScheduleKind::Interleaved},
      {"tp2 sel-recomp", 1, 2, 1, 1, 0, false, ScheduleKind::OneFOneB, strata::planner::Recompute::Selective},
      {"pp2 full-recomp", 1, 1, 2, 1, 0, false, ScheduleKind::OneFOneB, strata::planner::Recompute::Full},
  };
  const fs::path dir = fs::temp_directory_path() / ("strata_bench_runtime_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto model = bench_model();
  const char* threads = std::getenv("OPENBLAS_NUM_THREADS");

  fmt::print("# strata bench_runtime: CPU runtime throughput (strata train under mpirun)\n");
  fmt::print("# strata {} commit {} build {}\n", STRATA_VERSION, STRATA_GIT_COMMIT, STRATA_BUILD_TYPE);
  fmt::print("# backend cpu (OpenBLAS sgemm, Open MPI), fp32, host cores {}, OPENBLAS_NUM_THREADS {}\n",
             ::sysconf(_SC_NPROCESSORS_ONLN), threads ? threads : "unset (set to 1 per rank)");
  fmt::print("# model {}: layers {} hidden {} heads {} ffn {} vocab {} seq {}; micro-batch {}, global batch {} "
             "({} tokens/step)\n",
             model.name, model.layers, model.hidden, model.heads, model.ffn, model.vocab, model.seq_len,
             micro_batch, global_batch, global_batch * model.seq_len);
  fmt::print("# {} steps per layout, statistic: median of steps 3..{} (2 warm-up steps dropped); mpirun "
             "--bind-to none --mca mpi_yield_when_idle 1 (waiting ranks yield the core)\n", steps, steps);
  fmt::print("# {:>17} {:>5} {:>10} {:>12} {:>10} {:>7} {:>10} {:>10}\n", "layout", "ranks", "step", "tokens/s",
             "gemm", "gemm%", "dp wait", "loss@end");
  fmt::print("# {:>17} {:>5} {:>10} {:>12} {:>10} {:>7} {:>10} {:>10}\n", "", "", "(ms)", "", "(ms)", "", "(ms)", "");
  int failed = 0;
  for (const Layout& l : layouts) {
    Plan p;
    p.model = model;
    p.cluster = "local-cpu";
    p.strategy.dp = l.dp;
    p.strategy.tp = l.tp;
    p.strategy.pp = l.pp;
    p.strategy.vpp = l.vpp;
    p.strategy.zero = l.zero;
    p.strategy.sequence_parallel = l.sp;
    p.strategy.schedule = l.schedule;
    p.strategy.recompute = l.recompute;
    p.strategy.micro_batch = micro_batch;
    p.strategy.global_batch = global_batch;
    p.stage_layers = strata::planner::even_stage_layers(model, l.pp, l.vpp);
    const std::string plan = (dir / "plan.yaml").string(), metrics = (dir / "metrics.jsonl").string();
    strata::write_file_atomic(plan, strata::planner::plan_to_yaml(p));
    fs::remove(metrics);
    const int ranks = l.dp * l.tp * l.pp;
    const std::string cmd = fmt::format(
        "OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 {} "
        "--oversubscribe --bind-to none --mca mpi_yield_when_idle 1 -np {} '{}' train --plan '{}' --steps {} --metrics '{}' "
        "--log-every 1000 {} > '{}' 2>&1",
        MPIEXEC, ranks, STRATA_EXE, plan, steps, metrics, l.train_args, (dir / "log.txt").string());
    const int rc = std::system(cmd.c_str());
    std::vector<double> step_s, gemm_s, wait_s;
    double loss = 0;
    std::ifstream in(metrics);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      const auto j = strata::parse_json(line);
      loss = j.at("loss").get<double>();
      if (j.at("step").get<int>() <= 2) continue;
      step_s.push_back(j.at("step_s").get<double>());
      gemm_s.push_back(j.at("gemm_s").get<double>());
      wait_s.push_back(j.at("dp_wait_s").get<double>());
    }
    if (rc != 0 || step_s.empty()) {
      fmt::print("  {:>17} {:>5} failed (exit {}), see {}\n", l.name, ranks, rc, (dir / "log.txt").string());
      ++failed;
      continue;
    }
    const double s = median(step_s), g = median(gemm_s), w = median(wait_s);
    fmt::print("  {:>17} {:>5} {:10.2f} {:12.0f} {:10.2f} {:6.1f}% {:10.2f} {:10.4f}\n", l.name, ranks, s * 1e3,
               static_cast<double>(global_batch * model.seq_len) / s, g * 1e3, 100 * g / s, w * 1e3, loss);
  }
  fmt::print("# gemm = rank 0's time inside sgemm per step; the rest is attention softmax, norms,\n");
  fmt::print("# activations, copies, MPI collectives and pipeline waits (bubble). dp wait = rank 0's\n");
  fmt::print("# wait for the DP gradient reduction after its backward pass (the exposed part).\n");
  fmt::print("# {} layouts, {} failed\n", layouts.size(), failed);
  if (failed == 0) fs::remove_all(dir);
  return 0;
}
