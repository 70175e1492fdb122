// Predicted vs published: every row of the Megatron-LM weak-scaling table (Narayanan et
// al. 2021, Table 1; ../shared/validation/megatron-2021.yaml) simulated with the published
// strategy on the catalog model megatron-<params>b and the cluster the file names.
// The cluster's fitted training losses apply unless --tables-only (bench_main.h bench_cluster).
//
//   strata_bench_prediction_error [path/to/megatron-2021.yaml]
//
// Published iteration time = F / (gpus * published TFLOP/s), with the paper's FLOP count
// (full recompute) F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)). "pred TFLOP/s" divides the
// same F by the predicted iteration time, so both columns count FLOPs the same way; strata's
// own hardware FLOP/s (from the op graph: causal attention, recompute) is shown beside it.
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "bench/bench_main.h"
#include "costmodel/cluster_spec.h"
#include "models/model_spec.h"
#include "planner/simulator.h"
#include "strata_build_commit.h"  // STRATA_GIT_COMMIT, written at build time

namespace {

struct Row {
  double params_b = 0;
  int heads = 0, hidden = 0, layers = 0, tp = 1, pp = 1, gpus = 1, vpp = 1;
  std::int64_t global_batch = 0, micro_batch = 1;
  double tflops_per_gpu = 0;
};

using strata::bench::need;

int run(int argc, char** argv) {
  // --max-mape X: exit 1 when the MAPE exceeds X percent (the ctest figure check).
  double max_mape;
  const std::vector<std::string> args = strata::bench::positional_args(argc, argv, &max_mape);
  const std::string path =
      !args.empty() ? args[0] : std::string(STRATA_SOURCE_DIR) + "/bench/validation/megatron-2021.yaml";
  const YAML::Node doc = strata::bench::load_yaml(path);
  const std::string cluster_name = need<std::string>(doc, "cluster", path);
  const std::int64_t seq = need<std::int64_t>(doc, "seq_len", path);
  const std::int64_t vocab = need<std::int64_t>(doc, "vocab", path);
  const std::string recompute = need<std::string>(doc, "recompute", path);
  const std::string source = doc["source"] ? doc["source"].as<std::string>() : "(no source)";
  std::vector<Row> rows;
  int index = 0;
  for (const auto& n : doc["runs"]) {
    const std::string where = fmt::format("{}: runs[{}]", path, index++);
    Row r;
    r.params_b = need<double>(n, "params_b", where);
    r.heads = need<int>(n, "heads", where);
    r.hidden = need<int>(n, "hidden", where);
    r.layers = need<int>(n, "layers", where);
    r.tp = need<int>(n, "tp", where);
    r.pp = need<int>(n, "pp", where);
    r.gpus = need<int>(n, "gpus", where);
    r.global_batch = need<std::int64_t>(n, "global_batch", where);
    r.tflops_per_gpu = need<double>(n, "tflops_per_gpu", where);
    r.micro_batch = need<std::int64_t>(n, "micro_batch", where);
    r.vpp = need<int>(n, "vpp", where);
    rows.push_back(r);
  }
  const auto cluster = strata::bench::bench_cluster(strata::costmodel::load_cluster(cluster_name));
  const std::string stack_name = args.size() > 1 ? args[1] : "megatron-2021";
  const auto stack = strata::costmodel::load_software_stack(stack_name);
  // The SC21 Table 1 script (examples/sc21/run_table_1.sh) runs its rows without pipeline
  // parallelism with PyTorch DDP and the others with Megatron's local DDP.
  const auto torch_ddp = strata::costmodel::load_software_stack(
      stack_name == "megatron-2021" ? "megatron-2021-torch-ddp" : stack_name);

  fmt::print("# strata bench prediction_error: predicted vs published iteration time\n");
  fmt::print("# strata {} commit {} build {}\n", STRATA_VERSION, STRATA_GIT_COMMIT,
             STRATA_BUILD_TYPE);
  fmt::print("# published: {} ({})\n", source, path);
  fmt::print("# cluster {} (device {}), seq {}, vocab {}, recompute {}, 1F1B (interleaved when "
             "vpp > 1), no sequence parallel, ZeRO 0\n",
             cluster.name, cluster.device.name, seq, vocab, recompute);
  fmt::print("# FLOPs per iteration F = 96 B s l h^2 (1 + s/6h + V/16lh); published iter = F / "
             "(gpus x published TFLOP/s);\n# pred TFLOP/s = F / (gpus x predicted iter); hw "
             "TFLOP/s = strata's own count (op graph, causal attention)\n");
  fmt::print("# err = (predicted - published) / published\n");
  fmt::print("#\n");
  fmt::print("# {:>8} {:>5} {:>3} {:>3} {:>4} {:>4} {:>4} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} "
             "{:>7} {:>7} {:>7} {:>6}  {}\n",
             "params", "gpus", "tp", "pp", "dp", "mbs", "vpp", "B", "pub", "pred", "hw", "pub",
             "pred", "err", "mem", "bubble", "fits", "predicted breakdown (s)");
  fmt::print("# {:>8} {:>5} {:>3} {:>3} {:>4} {:>4} {:>4} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} "
             "{:>7} {:>7} {:>7} {:>6}  {}\n",
             "(B)", "", "", "", "", "", "", "", "(TFLOP/s)", "(TFLOP/s)", "(TFLOP/s)", "iter(s)",
             "iter(s)", "(%)", "(GiB)", "(%)", "", "compute/tp/pp/dp/opt/bubble");
  strata::bench::ErrorStats stats;
  for (const Row& r : rows) {
    const std::string name = fmt::format("megatron-{}b", r.params_b);
    strata::models::ModelSpec model = strata::models::load_model(name);
    if (model.layers != r.layers || model.hidden != r.hidden || model.heads != r.heads ||
        model.vocab != vocab || model.seq_len != seq)
      throw std::runtime_error(fmt::format(
          "catalog model {} (layers {}, hidden {}, heads {}, vocab {}, seq {}) does not match the "
          "published row (layers {}, hidden {}, heads {}, vocab {}, seq {})",
          name, model.layers, model.hidden, model.heads, model.vocab, model.seq_len, r.layers,
          r.hidden, r.heads, vocab, seq));
    strata::planner::Strategy s;
    s.tp = r.tp;
    s.pp = r.pp;
    s.dp = r.gpus / (r.tp * r.pp);
    s.vpp = r.vpp;
    s.micro_batch = r.micro_batch;
    s.global_batch = r.global_batch;
    s.recompute = strata::planner::recompute_from_string(recompute);
    s.schedule = r.vpp > 1 ? strata::planner::ScheduleKind::Interleaved
                           : strata::planner::ScheduleKind::OneFOneB;
    strata::planner::SimulateOptions sim_options;
    sim_options.stack = r.pp == 1 ? &torch_ddp : &stack;
    const auto p = strata::planner::simulate(model, cluster, s, sim_options).prediction;
    const double B = static_cast<double>(r.global_batch), sl = static_cast<double>(seq),
                 l = r.layers, h = r.hidden, V = static_cast<double>(vocab);
    const double flops = 96.0 * B * sl * l * h * h * (1.0 + sl / (6.0 * h) + V / (16.0 * l * h));
    const double pub_iter = flops / (r.gpus * r.tflops_per_gpu * 1e12);
    const double pred_tflops = flops / (r.gpus * p.iteration_s) / 1e12;
    const double err = (p.iteration_s - pub_iter) / pub_iter;
    stats.add(err, r.params_b, r.gpus);
    fmt::print("  {:>8} {:>5} {:>3} {:>3} {:>4} {:>4} {:>4} {:>5} {:>9.1f} {:>9.1f} {:>9.1f} "
               "{:>9.3f} {:>9.3f} {:>+7.1f} {:>7.1f} {:>7.1f} {:>6}  "
               "{:.2f}/{:.2f}/{:.2f}/{:.2f}/{:.2f}/{:.2f}\n",
               r.params_b, r.gpus, r.tp, r.pp, s.dp, r.micro_batch, r.vpp, r.global_batch,
               r.tflops_per_gpu, pred_tflops, p.hardware_tflops_per_gpu, pub_iter, p.iteration_s,
               err * 100, p.peak_memory_gib, p.bubble_fraction * 100,
               p.fits_memory ? "yes" : "NO", p.breakdown_s.compute, p.breakdown_s.tp_comm,
               p.breakdown_s.pp_comm, p.breakdown_s.dp_comm, p.breakdown_s.optimizer,
               p.breakdown_s.bubble);
    std::fflush(stdout);
  }
  fmt::print("# rows: {}\n", stats.rows);
  fmt::print("# MAPE of iteration time: {:.1f} %\n", 100 * stats.mape());
  fmt::print("# mean signed error of iteration time: {:+.1f} % (negative = strata predicts faster "
             "than published)\n",
             100 * stats.bias());
  strata::bench::print_residual_entry(
      stats, stack_name, cluster.device.name,
      fmt::format("{} ({})", std::filesystem::path(path).stem().string(), source), seq, seq);
  return strata::bench::check_max_mape(stats, max_mape);
}

}  // namespace

int main(int argc, char** argv) { return strata::bench::bench_main(run, argc, argv); }
