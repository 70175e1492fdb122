// Predicted vs published: Megatron-Core r0.8.0 weak scaling on H100 (Megatron-LM README,
// ../shared/validation/mcore-2024-h100.yaml, copied to bench/validation/).
//
//   strata_bench_prediction_error_mcore [path/to/mcore-2024-h100.yaml] [stack] [--max-mape X]
//
// The source gives tp, pp, dp and the global batch of each row but not the micro-batch,
// virtual pipeline, sequence parallelism or recompute. Those are searched (the planner's
// best choice under the row's tp/pp/dp, distributed optimizer as the stack uses it), i.e.
// the prediction assumes the published run was tuned as well as strata would tune it.
// Models: GPT with a 4h MLP, untied embeddings, the file's vocabulary and sequence length.
// Published iteration = F / (gpus x TFLOP/s) with the model-FLOP count the file states,
// F = 72 B s l h^2 (1 + s/6h + V/12lh) (no recompute counted).
// The cluster's fitted training losses apply unless --tables-only (bench_main.h bench_cluster).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "bench/bench_main.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/software_stack.h"
#include "models/model_spec.h"
#include "planner/search.h"
#include "strata_build_commit.h"  // STRATA_GIT_COMMIT, written at build time

namespace {

int run(int argc, char** argv) {
  double max_mape;
  const std::vector<std::string> args = strata::bench::positional_args(argc, argv, &max_mape);
  const std::string path = !args.empty() ? args[0]
                                         : std::string(STRATA_SOURCE_DIR) + "/bench/validation/mcore-2024-h100.yaml";
  const std::string stack_name = args.size() > 1 ? args[1] : "mcore-2024";
  const YAML::Node doc = YAML::LoadFile(path);
  const auto cluster = strata::bench::bench_cluster(strata::costmodel::load_cluster(doc["cluster"].as<std::string>()));
  const auto stack = strata::costmodel::load_software_stack(stack_name);
  const std::int64_t seq = doc["seq_len"].as<std::int64_t>();
  const std::int64_t vocab = doc["vocab"].as<std::int64_t>();

  fmt::print("# strata bench prediction_error_mcore: predicted vs published iteration time\n");
  fmt::print("# strata {} commit {} build {}\n", STRATA_VERSION, STRATA_GIT_COMMIT, STRATA_BUILD_TYPE);
  fmt::print("# published: {} ({})\n", doc["source"].as<std::string>(), path);
  fmt::print("# cluster {} (device {}), stack {}, seq {}, vocab {}; micro-batch, vpp, SP and recompute "
             "searched under the row's tp/pp/dp (zero 1: distributed optimizer)\n",
             cluster.name, cluster.device.name, stack.name, seq, vocab);
  fmt::print("# F = 72 B s l h^2 (1 + s/6h + V/12lh); err = (predicted - published) / published\n#\n");
  fmt::print("# {:>10} {:>5} {:>3} {:>3} {:>4} {:>5} {:>8} {:>8} {:>8} {:>8} {:>7}  {}\n", "row", "gpus", "tp",
             "pp", "dp", "B", "pub(s)", "pred(s)", "pub TF", "pred TF", "err(%)", "chosen (mbs/vpp/sp/recompute)");
  strata::bench::ErrorStats stats;
  for (const auto& r : doc["runs"]) {
    strata::models::ModelSpec m;
    m.name = r["id"].as<std::string>();
    m.layers = r["layers"].as<std::int64_t>();
    m.hidden = r["hidden"].as<std::int64_t>();
    m.heads = r["heads"].as<std::int64_t>();
    m.kv_heads = m.heads;
    m.ffn = 4 * m.hidden;
    m.vocab = vocab;
    m.seq_len = seq;
    m.tied_embeddings = false;
    strata::models::validate(m, path);
    const int tp = r["tp"].as<int>(), pp = r["pp"].as<int>(), dp = r["dp"].as<int>();
    const std::int64_t B = r["global_batch"].as<std::int64_t>();
    const double tflops = r["tflops_per_gpu"].as<double>();
    strata::planner::SearchOptions o;
    o.stack = &stack;
    o.gpus = tp * pp * dp;
    o.global_batch = B;
    o.top_k = 1;
    o.tp = tp, o.pp = pp, o.dp = dp;
    o.zero = stack.distributed_optimizer ? 1 : 0;
    const auto res = strata::planner::search(m, cluster, o);
    const double sl = static_cast<double>(seq), l = static_cast<double>(m.layers),
                 h = static_cast<double>(m.hidden), V = static_cast<double>(vocab);
    const double F = 72.0 * B * sl * l * h * h * (1 + sl / (6 * h) + V / (12 * l * h));
    const double pub = F / (o.gpus * tflops * 1e12);
    if (res.ranked.empty()) {
      fmt::print("  {:>10} {:>5} {:>3} {:>3} {:>4} {:>5} {:>8.3f}  nothing fits memory\n", m.name, o.gpus, tp,
                 pp, dp, B, pub);
      continue;
    }
    const auto& c = res.ranked.front();
    const double pred = c.prediction.iteration_s;
    const double err = (pred - pub) / pub;
    stats.add(err, r["params_b"].as<double>(), o.gpus);
    fmt::print("  {:>10} {:>5} {:>3} {:>3} {:>4} {:>5} {:>8.3f} {:>8.3f} {:>8.1f} {:>8.1f} {:>+7.1f}  {}/{}/{}/{}\n",
               m.name, o.gpus, tp, pp, dp, B, pub, pred, tflops, F / (o.gpus * pred) / 1e12, 100 * err,
               c.strategy.micro_batch, c.strategy.vpp, c.strategy.sequence_parallel ? "sp" : "-",
               strata::planner::to_string(c.strategy.recompute));
    std::fflush(stdout);
  }
  fmt::print("# rows: {}\n# MAPE of iteration time: {:.1f} %\n# mean signed error: {:+.1f} %\n", stats.rows,
             100 * stats.mape(), 100 * stats.bias());
  strata::bench::print_residual_entry(stats, stack.name, cluster.device.name,
                                      fmt::format("{} ({})", std::filesystem::path(path).stem().string(),
                                                  doc["source"].as<std::string>().substr(0, 60)),
                                      seq, seq);
  return strata::bench::check_max_mape(stats, max_mape);
}

}  // namespace

int main(int argc, char** argv) { return strata::bench::bench_main(run, argc, argv); }
