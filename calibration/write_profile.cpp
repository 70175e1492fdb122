// Calibration step 4 (detail/calibration_steps.h), rank 0: the profile's provenance (tool,
// commit, host, libraries, ranks, load, the command that regenerates it, the method, the
// shapes and timing of every table), the nccl-tests style report (or JSON), the profile
// YAML with the measured op_table and block_table, handed to the caller; the rows that
// failed validation are said on stderr.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "calibration/detail/calibration_steps.h"
#include "costmodel/device_profile.h"

namespace strata::calibration::detail {

namespace kp = strata::kernels::profiler;

namespace {

// Where every number came from.
void record_provenance(const CalibrationRequest& f, const SweepPlan& plan, Measurements& m,
                       const std::vector<std::string>& model_names, const std::vector<std::string>& tps) {
  const kp::RunContext& ctx = m.ctx;
  kp::ProfileInfo& info = m.info;
  info.provenance = {{"tool", "strata calibrate"},
                     {"strata", ctx.strata_version},
                     {"commit", ctx.commit},
                     {"host", ctx.host},
                     {"device", ctx.device},
                     {"backend", ctx.backend}};
  for (const auto& kv : m.libs) info.provenance.push_back(kv);
  info.provenance.push_back({"ranks", fmt::format("{} x {} node(s)", ctx.ranks, ctx.nodes)});
  if (plan.backend == kernels::Backend::Cpu)
    info.provenance.push_back({"blas_threads_per_rank", std::to_string(ctx.blas_threads)});
  info.provenance.push_back({"date", ctx.date});
  info.provenance.push_back(
      {"load_average", fmt::format("{} before, {} after (1-minute, /proc/loadavg; {} logical CPUs)", m.load_before,
                                   load_average(), std::thread::hardware_concurrency())});
  info.provenance.push_back(
      {"command", fmt::format("strata calibrate --backend {} --out {}{}{}{}{}{}{}{}{}", ctx.backend, f.out,
                              model_names.empty() ? "" : " --model " + join(model_names, ","),
                              model_names.empty() ? "" : " --tp-degrees " + join(tps, ","),
                              model_names.empty() ? "" : fmt::format(" --micro-batch {}", f.micro_batch),
                              f.quick ? " --quick" : "",
                              f.max_bytes.empty() ? "" : " --max-bytes " + f.max_bytes,
                              f.max_gemm_dim > 0 ? fmt::format(" --max-gemm-dim {}", f.max_gemm_dim) : "",
                              f.dtypes.empty() ? "" : " --dtypes " + join(f.dtypes, ","),
                              f.sustain_s > 0 ? fmt::format(" --sustain {:g}", f.sustain_s) : "",
                              f.max_gemm_seconds > 0 ? fmt::format(" --max-gemm-seconds {:g}", f.max_gemm_seconds) : "")});
  info.provenance.push_back(
      {"method", "validate-then-time: each GEMM is checked against a double-precision reference and each "
                 "collective against a closed form before timing; warm-up, then timed repetitions after "
                 "a barrier (GEMMs and runtime ops: bursts of back-to-back runs, all ranks busy at once); "
                 "time = median over repetitions of the slowest rank"});
  info.gemm_provenance = {
      {"shapes", fmt::format("square 128..{}{}", plan.max_dim,
                             model_names.empty() ? "" : fmt::format("; sharded fwd/dgrad/wgrad of {} at tp {} (routed experts at ep x etp / tp per-expert tokens), micro-batch {}",
                                                                    join(model_names, ", "), join(tps, ","), f.micro_batch))},
      {"timing", kp::describe(m.gemm_timing)},
      {"concurrency", fmt::format("all {} rank(s) run the same GEMM at once", ctx.ranks)}};
  // A run bounded by --max-gemm-seconds says how much of the sweep it covered.
  const auto unmeasured = std::count_if(m.gemms.begin(), m.gemms.end(), [](const kp::GemmRecord& r) {
    return r.error.rfind("skipped: the sweep's", 0) == 0;
  });
  if (unmeasured > 0)
    info.gemm_provenance.push_back(
        {"bounded", fmt::format("--max-gemm-seconds {:g}: {} of {} shapes measured, the rest (the largest "
                                "FLOPs last in the sweep order) not started",
                                f.max_gemm_seconds, m.gemms.size() - static_cast<std::size_t>(unmeasured),
                                m.gemms.size())});
  info.collective_provenance = {
      {"transport", ctx.transport},
      {"sizes", fmt::format("8 B .. {}, powers of two, fp32", kp::human_bytes(plan.max_bytes))},
      {"busbw", "nccl-tests: all_reduce 2(n-1)/n, all_gather/reduce_scatter/all_to_all (n-1)/n, others 1"},
      {"timing", kp::describe(m.coll_timing)}};
  info.comments = {
      fmt::format("Measured device profile written by `strata calibrate` ({}).", ctx.date),
      fmt::format("{} on {} ({} rank(s) x {} node(s)); regenerate with the command in source.command.",
                  ctx.device, ctx.host, ctx.ranks, ctx.nodes),
      "Only rows that passed validation are listed; see source fields for method and libraries."};
}

// The GEMM, bandwidth and collective tables (or JSON).
std::string sweep_report(const CalibrationRequest& f, const Measurements& m) {
  const kp::ProfileInfo& info = m.info;
  if (f.format == "json") {
    auto j = kp::sweep_json(m.ctx, m.gemms, m.collectives, m.bw);
    j["profile"] = {{"name", info.name}, {"path", f.out}, {"gemm_efficiency", info.gemm_efficiency},
                    {"attention_efficiency", info.attention_efficiency},
                    {"memory_bandwidth_gbps", info.memory_bandwidth_gbps}};
    return j.dump(2) + "\n";
  }
  std::string report = kp::format_gemm_table(m.ctx, m.gemms);
  report += fmt::format("#\n# memory bandwidth per rank (copy of {}, all ranks at once): {:.2f} GB/s "
                        "(median of {}, p10 {:.0f} us, p90 {:.0f} us)\n#\n",
                        kp::human_bytes(m.bw.bytes), m.bw.gbps, m.bw.time.reps, m.bw.time.p10_us, m.bw.time.p90_us);
  report += kp::format_collective_table(m.ctx, m.collectives);
  report += fmt::format("# profile: {} -> {}\n", info.name, f.out);
  return report;
}

// A table this run measured: the run (tool, commit, host, date) and what the table says
// about itself (kernels, shapes, timing, ...).
costmodel::Provenance measured_by_this_run(const kp::RunContext& ctx, std::map<std::string, std::string> about) {
  about.insert({{"tool", "strata calibrate"}, {"commit", ctx.commit}, {"host", ctx.host}, {"date", ctx.date}});
  return {"measured", std::move(about)};
}

// The samples of measured op or block rows, in order.
template <typename Row>
auto samples_of(const std::vector<Row>& rows) {
  std::vector<decltype(Row::sample)> samples;
  for (const auto& r : rows) samples.push_back(r.sample);
  return samples;
}

// The micro-batch sizes a benchmark ran, as its provenance lists them ("1,4,16").
std::string micro_batch_list(const std::vector<std::int64_t>& micro_batches) {
  std::vector<std::string> mbs;
  for (auto mb : micro_batches) mbs.push_back(std::to_string(mb));
  return join(mbs, ",");
}

// The runtime ops' op_table (YAML) and their rows in the report.
void op_table(const CalibrationRequest& f, const Measurements& m, const std::vector<std::string>& model_names,
              const std::vector<std::string>& tps, std::string& yaml, std::string& report) {
  const kp::RunContext& ctx = m.ctx;
  const std::string mbs = micro_batch_list(m.ops_options.micro_batches);
  const costmodel::Provenance src = measured_by_this_run(
      ctx, {{"kernels", "the runtime's fp32 CPU kernels (runtime/), as strata train runs them"},
            {"shapes", fmt::format("one block and the loss of {} at tp {}, micro-batch {}", join(model_names, ", "),
                                   join(tps, ","), mbs)},
            {"work", "costmodel::op_work: bytes moved (fp32), or attention matmul FLOPs per rank"},
            {"timing",
             fmt::format("{}; rank 0 of {} running at once", kp::describe(m.ops_options.timing), ctx.ranks)}});
  yaml += costmodel::op_table_yaml(samples_of(m.op_rows), src);
  if (f.format == "json") return;
  report += "#\n# runtime ops (non-GEMM kernels of strata train; work = bytes, attention: FLOPs)\n";
  report += fmt::format("# {:<16} {:<14} {:>14} {:>12} {:>12}\n", "op", "shape", "work", "fwd_us", "bwd_us");
  for (const auto& r : m.op_rows)
    report += fmt::format("  {:<16} {:<14} {:>14.0f} {:>12.2f} {:>12.2f}\n", r.sample.op, r.shape,
                          r.sample.work, r.sample.fwd_us, r.sample.bwd_us);
}

// The runtime blocks' block_table (YAML) and their rows in the report.
void block_table(const CalibrationRequest& f, const Measurements& m, const std::vector<std::string>& model_names,
                 const std::vector<std::string>& tps, std::string& yaml, std::string& report) {
  const kp::RunContext& ctx = m.ctx;
  const std::string mbs = micro_batch_list(m.blocks_options.micro_batches);
  const costmodel::Provenance src = measured_by_this_run(
      ctx, {{"kernels", "runtime::TransformerBlock<float> forward + backward, as strata train runs it; TP "
                        "collectives replaced by local stand-ins (charged separately)"},
            {"shapes", fmt::format("{} at tp {} (with and without sequence parallelism), micro-batch {}",
                                   join(model_names, ", "), join(tps, ","), mbs)},
            {"timing", fmt::format("{}; blocks chained like a model chunk; rank 0 of {} running at once",
                                   kp::describe(m.blocks_options.timing), ctx.ranks)}});
  yaml += costmodel::block_table_yaml(samples_of(m.block_rows), src);
  if (f.format == "json") return;
  report += "#\n# runtime blocks (one transformer block of strata train, fwd/bwd per micro-batch, no TP comm)\n";
  report += "#   (with tp: the same with a real TP group of consecutive ranks, all groups at once)\n";
  report += fmt::format("# {:<12} {:<16} {:>10} {:>10} {:>14} {:>14}\n", "model", "shape", "fwd_us", "bwd_us",
                        "fwd_with_tp_us", "bwd_with_tp_us");
  for (const auto& r : m.block_rows) {
    const bool tp = r.sample.fwd_with_tp_us > 0;
    report += fmt::format("  {:<12} {:<16} {:>10.1f} {:>10.1f} {:>14} {:>14}\n", r.model, r.shape, r.sample.fwd_us,
                          r.sample.bwd_us, tp ? fmt::format("{:.1f}", r.sample.fwd_with_tp_us) : "-",
                          tp ? fmt::format("{:.1f}", r.sample.bwd_with_tp_us) : "-");
  }
}

}  // namespace

void write_profile(const CalibrationRequest& f, const CalibrationOutput& io, const SweepPlan& plan,
                   Measurements& m) {
  std::vector<std::string> model_names;
  for (const auto& g : plan.graphs) model_names.push_back(g.spec().name);
  std::vector<std::string> tps;
  for (int tp : f.tp_degrees) tps.push_back(std::to_string(tp));
  record_provenance(f, plan, m, model_names, tps);

  std::string report = sweep_report(f, m);
  std::string yaml = kp::profile_to_yaml(m.info, m.gemms, m.collectives);
  if (!m.op_rows.empty()) op_table(f, m, model_names, tps, yaml, report);
  if (!m.block_rows.empty()) block_table(f, m, model_names, tps, yaml, report);
  for (const auto& s : m.block_skipped) report += "# skipped: " + s + "\n";
  if (io.emit) io.emit(report, yaml);
  for (const auto& g : m.gemms)
    if (!g.ok() && g.error.rfind("skipped", 0) != 0)
      fmt::print(stderr, "error: gemm {}x{}x{} {}: {} (left out of the profile)\n", g.m, g.n, g.k,
                 to_string(g.dtype), g.error);
  for (const auto& c : m.collectives)
    if (!c.ok())
      fmt::print(stderr, "error: {} {} B on {} ranks: {} (left out of the profile)\n", to_string(c.collective),
                 c.bytes, c.ranks, c.error);
}

}  // namespace strata::calibration::detail
