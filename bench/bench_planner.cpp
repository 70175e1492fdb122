// Planner speed: the full strategy search of GPT-3 175B (every valid candidate scored for
// memory and bounded in time; the ones that can still rank simulated) on DGX A100 and DGX
// H100 clusters from 64 to 16384 GPUs, on the search's default threads. Prints candidates,
// simulations, seconds (median over repetitions) and candidates per second, nccl-tests
// style. --no-prune simulates every candidate (SearchOptions::prune = false);
// --check-exhaustive runs each row once more without pruning and says whether the top K
// is the same (strategies, stage splits and iteration times, exactly).
//
//   strata_bench_planner [--reps N] [--gpus 64,1024,...] [--model NAME] [--global-batch B]
//                        [--cluster dgx-a100,dgx-h100] [--threads N] [--top K] [--no-prune]
//                        [--check-exhaustive]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/bench_main.h"
#include "costmodel/cluster_spec.h"
#include "models/model_spec.h"
#include "planner/search.h"
#include "strata_build_commit.h"  // STRATA_GIT_COMMIT, written at build time

namespace {

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::vector<std::string> parse_names(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t comma = s.find(',', pos);
    const std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  for (const std::string& item : parse_names(s)) out.push_back(std::stoi(item));
  return out;
}

// Whether two searches kept the same plans in the same order, to the bit.
bool same_top(const strata::planner::SearchResult& a, const strata::planner::SearchResult& b) {
  if (a.ranked.size() != b.ranked.size()) return false;
  for (std::size_t i = 0; i < a.ranked.size(); ++i) {
    const auto& x = a.ranked[i];
    const auto& y = b.ranked[i];
    if (!(x.strategy == y.strategy) || x.stage_layers != y.stage_layers ||
        x.prediction.iteration_s != y.prediction.iteration_s ||
        x.prediction.peak_memory_gib != y.prediction.peak_memory_gib)
      return false;
  }
  return true;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int run(int argc, char** argv) {
  int reps = 3;
  std::vector<int> gpu_counts = {64, 256, 1024, 4096, 16384};
  std::string model_name = "gpt3-175b";
  std::int64_t global_batch = 1536;  // GPT-3: 3.2M tokens = 1536 x 2048 (Brown et al. 2020)
  int threads = 0, top_k = 1;
  bool prune = true, check_exhaustive = false;
  std::vector<std::string> clusters = {"dgx-a100", "dgx-h100"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error("missing value for " + a);
      return argv[++i];
    };
    if (a == "--reps") reps = std::max(1, std::stoi(value()));
    else if (a == "--gpus") gpu_counts = parse_list(value());
    else if (a == "--model") model_name = value();
    else if (a == "--global-batch") global_batch = std::stoll(value());
    else if (a == "--threads") threads = std::max(0, std::stoi(value()));
    else if (a == "--top") top_k = std::max(1, std::stoi(value()));
    else if (a == "--no-prune") prune = false;
    else if (a == "--check-exhaustive") check_exhaustive = true;
    else if (a == "--cluster") clusters = parse_names(value());
    else throw std::runtime_error("unknown argument " + a +
                                  " (expected --reps, --gpus, --model, --global-batch, --cluster, "
                                  "--threads, --top, --no-prune, --check-exhaustive)");
  }
  const auto model = strata::models::load_model(model_name);

  fmt::print("# strata bench_planner: full strategy search, every valid candidate scored\n");
  fmt::print("# strata {} commit {} build {}\n", STRATA_VERSION, STRATA_GIT_COMMIT,
             STRATA_BUILD_TYPE);
  fmt::print("# model {} (layers {}, hidden {}, heads {}), global batch {} x seq {}\n",
             model.name, model.layers, model.hidden, model.heads, global_batch, model.seq_len);
  fmt::print("# threads {} (0: the search's default, every core up to 8), top {}, pruning {}\n"
             "# cpu = process CPU time of one planner::search call, all threads (enumerate, validate,\n"
             "# screen, simulate, rank), median of {} repetitions after a first (cold) run, whose CPU\n"
             "# time is 'cold'; wall = search_s (median), inflated when the machine is shared;\n"
             "# walked = candidates simulated with the pipeline walk; pruned = candidates that fit but\n"
             "# whose lower bound exceeded the k-th best (never walked); rate = candidates / cpu;\n"
             "# same = the top K equals an exhaustive search's (--check-exhaustive; '-' not checked)\n",
             threads, top_k, prune ? "on" : "off (every candidate simulated)", reps);
  fmt::print("# clusters are extended to the node count a row needs (datasheet links unchanged)\n");
  if (std::string(STRATA_BUILD_TYPE) != "Release")
    fmt::print("# ***WARNING*** {} build: planner timings are not representative\n",
               STRATA_BUILD_TYPE);
  fmt::print("#\n");
  fmt::print("# {:>9} {:>6} {:>10} {:>7} {:>10} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>9} {:>4}  {:<34} {:>8} {:>5}\n",
             "cluster", "gpus", "candidates", "invalid", "infeasible", "feasible", "walked", "pruned",
             "cpu", "cold", "wall", "rate", "same", "best strategy", "iter", "MFU");
  fmt::print("# {:>9} {:>6} {:>10} {:>7} {:>10} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>9} {:>4}  {:<34} {:>8} {:>5}\n",
             "", "", "(#)", "(#)", "(#)", "(#)", "(#)", "(#)", "(s)", "(s)", "(s)", "(cand/s)", "",
             "(tp pp dp vpp mbs zero rc sp ep)", "(s)", "(%)");
  double total_s = 0;
  std::int64_t total_candidates = 0;
  for (const auto& cname : clusters) {
    auto cluster = strata::costmodel::load_cluster(cname);
    for (int gpus : gpu_counts) {
      const int need_nodes = (gpus + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
      cluster.nodes = std::max(cluster.nodes, need_nodes);
      strata::planner::SearchOptions o;
      o.gpus = gpus;
      o.global_batch = global_batch;
      o.top_k = top_k;
      o.threads = threads;
      o.prune = prune;
      double c0 = cpu_seconds();
      strata::planner::SearchResult r = strata::planner::search(model, cluster, o);  // cold
      const double cold = cpu_seconds() - c0;
      std::vector<double> cpu, wall;
      for (int k = 0; k < reps; ++k) {
        c0 = cpu_seconds();
        r = strata::planner::search(model, cluster, o);
        cpu.push_back(cpu_seconds() - c0);
        wall.push_back(r.search_s);
      }
      const double t = median(cpu);
      total_s += t;
      total_candidates += r.candidates_evaluated;
      std::string best = "(none fits)";
      double iter = 0, mfu = 0;
      if (!r.ranked.empty()) {
        const auto& s = r.ranked.front().strategy;
        best = fmt::format("{} {} {} {} {} {} {} {}", s.tp, s.pp, s.dp, s.vpp, s.micro_batch,
                           s.zero, strata::planner::to_string(s.recompute),
                           s.sequence_parallel ? "sp" : "-");
        if (model.moe) best += fmt::format(" {}", s.ep);
        iter = r.ranked.front().prediction.iteration_s;
        mfu = r.ranked.front().prediction.mfu * 100;
      }
      const std::int64_t feasible = r.candidates_evaluated - r.infeasible_memory;
      std::string same = "-";
      if (check_exhaustive) {
        strata::planner::SearchOptions all = o;
        all.prune = false;
        same = same_top(r, strata::planner::search(model, cluster, all)) ? "yes" : "NO";
      }
      fmt::print("  {:>9} {:>6} {:>10} {:>7} {:>10} {:>8} {:>7} {:>7} {:>7.3f} {:>7.3f} {:>7.3f} {:>9.0f} {:>4}  {:<34} {:>8.3f} {:>5.1f}\n",
                 cname, gpus, r.candidates_evaluated, r.invalid, r.infeasible_memory, feasible,
                 r.simulated, r.pruned, t, cold, median(wall), t > 0 ? r.candidates_evaluated / t : 0.0, same,
                 best, iter, mfu);
      std::fflush(stdout);
    }
  }
  fmt::print("# total: {} candidates searched in {:.3f} s of CPU ({:.0f} candidates/s)\n",
             total_candidates, total_s, total_s > 0 ? total_candidates / total_s : 0.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return strata::bench::bench_main(run, argc, argv); }
