#include "kernels/profiler/sweep_report.h"

#include <ctime>
#include <map>

#include <fmt/format.h>

namespace strata::kernels::profiler {

namespace {

std::string preamble(const RunContext& ctx, const char* what, const TimingOptions& t) {
  std::string s;
  s += fmt::format("# {} ({}): strata {} commit {}\n", ctx.tool, what, ctx.strata_version, ctx.commit);
  s += fmt::format("# backend: {} (transport {})  device: {}  host: {}\n", ctx.backend, ctx.transport,
                   ctx.device, ctx.host);
  s += fmt::format("# ranks: {} x {} node{}", ctx.ranks, ctx.nodes, ctx.nodes == 1 ? "" : "s");
  if (ctx.backend == "cpu") s += fmt::format("  BLAS threads per rank: {}", ctx.blas_threads);
  s += "\n";
  if (!ctx.libraries.empty()) s += fmt::format("# libraries: {}\n", ctx.libraries);
  s += fmt::format("# date: {}", ctx.date);
  if (!ctx.load_average.empty()) s += fmt::format("  load average at start: {}", ctx.load_average);
  s += "\n";
  s += fmt::format(
      "# method: first run validated against a closed form / reference, then up to {} warm-up runs,\n"
      "#   then {}..{} timed repetitions within {:.2g} s; each repetition starts after a barrier and\n"
      "#   takes the slowest rank's time; statistic: median (p10/p90 in --format json)\n",
      t.warmup, t.min_reps, t.max_reps, t.budget_s);
  if (t.min_sample_s > 0)
    s += fmt::format("#   a repetition runs the kernel back to back for >= {:.3g} ms (all ranks busy at once)\n"
                     "#   and counts the mean per run\n",
                     t.min_sample_s * 1e3);
  if (t.sustain_s > 0)
    s += fmt::format("#   timed after {:g} s of back-to-back GEMMs on every rank (sustained clocks)\n", t.sustain_s);
  return s;
}

std::string cell(double v, const char* fmtspec) {
  return fmt::format(fmt::runtime(fmtspec), v);
}

}  // namespace

std::string utc_timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string human_bytes(std::int64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  std::int64_t v = bytes;
  while (v >= 1024 && v % 1024 == 0 && u < 4) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{} {}", v, units[u]);
}

std::string format_gemm_table(const RunContext& ctx, const std::vector<GemmRecord>& records) {
  std::string s = preamble(ctx, "GEMM", ctx.gemm_timing);
  if (!ctx.peak.empty()) s += fmt::format("# peak per rank: {}\n", ctx.peak);
  if (ctx.backend == "cpu")
    s += "#   (the clock is /proc/cpuinfo's, usually the base clock: with turbo/boost, small in-cache\n"
         "#   GEMMs can exceed 100%)\n";
  s += "#\n";
  s += fmt::format("#{:>9} {:>9} {:>9} {:>6} {:>12} {:>9} {:>7} {:>7}\n", "m", "n", "k", "dtype", "time",
                   "TFLOP/s", "eff", "#wrong");
  s += fmt::format("#{:>9} {:>9} {:>9} {:>6} {:>12} {:>9} {:>7} {:>7}\n", "", "", "", "", "(us)", "",
                   "(%)", "");
  int ok = 0, failed = 0, skipped = 0;
  std::map<GemmDType, std::vector<double>> eff;
  for (const auto& r : records) {
    bool timed = r.time.reps > 0;
    if (r.ok()) ++ok;
    else if (r.error.rfind("skipped", 0) == 0) ++skipped;
    else ++failed;
    if (r.ok() && r.efficiency > 0) eff[r.dtype].push_back(r.efficiency);
    s += fmt::format(" {:>9} {:>9} {:>9} {:>6} {:>12} {:>9} {:>7} {:>7}\n", r.m, r.n, r.k,
                     to_string(r.dtype), timed ? cell(r.time.median_us, "{:.1f}") : "-",
                     timed ? cell(r.tflops, "{:.4f}") : "-",
                     timed && r.efficiency > 0 ? cell(100 * r.efficiency, "{:.1f}") : "-",
                     r.error.rfind("skipped", 0) == 0 ? std::string("-") : fmt::format("{}", r.check.wrong));
  }
  s += fmt::format("# {} shapes measured, {} failed validation, {} skipped\n", ok, failed, skipped);
  for (auto& [d, v] : eff) {
    std::sort(v.begin(), v.end());
    double med = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    s += fmt::format("# {} efficiency vs peak: median {:.1f}%, min {:.1f}%, max {:.1f}%\n", to_string(d),
                     100 * med, 100 * v.front(), 100 * v.back());
  }
  return s;
}

std::string format_collective_table(const RunContext& ctx, const std::vector<CollectiveRecord>& records) {
  std::string s = preamble(ctx, "collectives", ctx.collective_timing);
  s += "# dtype: float (fp32), reduction: sum; size = all-reduce/broadcast buffer, gathered output of\n"
       "#   all_gather, input of reduce_scatter, send buffer of all_to_all, message of send_recv (ring)\n";
  s += "# busbw = algbw x factor: all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n;\n"
       "#   broadcast, send_recv 1 (nccl-tests doc/PERFORMANCE.md). One-rank groups move no data (trivial).\n";
  s += "#\n";
  s += fmt::format("#{:>11} {:>11} {:>6} {:>15} {:>6} {:>6} {:>11} {:>8} {:>8} {:>7}\n", "size", "count",
                   "type", "collective", "ranks", "groups", "time", "algbw", "busbw", "#wrong");
  s += fmt::format("#{:>11} {:>11} {:>6} {:>15} {:>6} {:>6} {:>11} {:>8} {:>8} {:>7}\n", "(B)",
                   "(elements)", "", "", "", "", "(us)", "(GB/s)", "(GB/s)", "");
  struct Acc {
    double sum = 0;
    int n = 0;
    std::int64_t lo = 0, hi = 0;
  };
  std::map<std::pair<int, int>, Acc> avg;  // (collective, ranks)
  std::int64_t wrong = 0;
  int trivial = 0;
  for (const auto& r : records) {
    bool timed = r.time.reps > 0;
    wrong += r.wrong;
    if (r.trivial) ++trivial;
    s += fmt::format(" {:>11} {:>11} {:>6} {:>15} {:>6} {:>6} {:>11} {:>8} {:>8} {:>7}\n", r.bytes, r.count,
                     "float", to_string(r.collective), r.ranks, r.groups,
                     timed ? cell(r.time.median_us, "{:.2f}") : "-", timed ? cell(r.algbw_gbps, "{:.2f}") : "-",
                     timed ? cell(r.busbw_gbps, "{:.2f}") : "-", r.wrong);
    if (r.ok() && !r.trivial) {
      auto& a = avg[{static_cast<int>(r.collective), r.ranks}];
      a.sum += r.busbw_gbps;
      if (a.n++ == 0) a.lo = r.bytes;
      a.hi = r.bytes;
    }
  }
  s += fmt::format("# Out of bounds values : {} {}\n", wrong, wrong == 0 ? "OK" : "FAILED");
  for (const auto& [key, a] : avg)
    s += fmt::format("# Avg bus bandwidth    : {:.3f} GB/s  ({}, {} ranks, {} .. {})\n", a.sum / a.n,
                     to_string(static_cast<CollectiveKind>(key.first)), key.second, human_bytes(a.lo),
                     human_bytes(a.hi));
  if (trivial > 0) s += fmt::format("# {} rows on one-rank groups are trivial (no data moved)\n", trivial);
  return s;
}

nlohmann::json to_json(const RunContext& ctx) {
  auto timing = [](const TimingOptions& t) {
    return nlohmann::json{{"warmup", t.warmup}, {"min_reps", t.min_reps}, {"max_reps", t.max_reps},
                          {"budget_s", t.budget_s}, {"statistic", "median"}};
  };
  return {{"tool", ctx.tool},       {"strata_version", ctx.strata_version},
          {"commit", ctx.commit},   {"backend", ctx.backend},
          {"transport", ctx.transport}, {"device", ctx.device},
          {"host", ctx.host},       {"libraries", ctx.libraries},
          {"date", ctx.date},       {"load_average", ctx.load_average},
          {"ranks", ctx.ranks},
          {"nodes", ctx.nodes},     {"blas_threads", ctx.blas_threads},
          {"peak", ctx.peak},       {"gemm_timing", timing(ctx.gemm_timing)},
          {"collective_timing", timing(ctx.collective_timing)}};
}

nlohmann::json to_json(const GemmRecord& r) {
  nlohmann::json j = {{"m", r.m},
                      {"n", r.n},
                      {"k", r.k},
                      {"dtype", to_string(r.dtype)},
                      {"origin", r.origin},
                      {"time_us", r.time.median_us},
                      {"p10_us", r.time.p10_us},
                      {"p90_us", r.time.p90_us},
                      {"reps", r.time.reps},
                      {"tflops", r.tflops},
                      {"efficiency", r.efficiency},
                      {"checked", r.check.checked},
                      {"wrong", r.check.wrong},
                      {"max_error", r.check.max_error},
                      {"ok", r.ok()}};
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

nlohmann::json to_json(const CollectiveRecord& r) {
  nlohmann::json j = {{"collective", to_string(r.collective)},
                      {"type", "float"},
                      {"ranks", r.ranks},
                      {"groups", r.groups},
                      {"bytes", r.bytes},
                      {"count", r.count},
                      {"time_us", r.time.median_us},
                      {"p10_us", r.time.p10_us},
                      {"p90_us", r.time.p90_us},
                      {"reps", r.time.reps},
                      {"algbw_gbps", r.algbw_gbps},
                      {"busbw_gbps", r.busbw_gbps},
                      {"bus_factor", bus_factor(r.collective, r.ranks)},
                      {"wrong", r.wrong},
                      {"trivial", r.trivial},
                      {"ok", r.ok()}};
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

nlohmann::json to_json(const BandwidthRecord& r) {
  return {{"bytes", r.bytes},          {"time_us", r.time.median_us}, {"p10_us", r.time.p10_us},
          {"p90_us", r.time.p90_us},   {"reps", r.time.reps},         {"gbps", r.gbps},
          {"method", "copy: 2 x bytes / time, all ranks at once"}};
}

nlohmann::json sweep_json(const RunContext& ctx, const std::vector<GemmRecord>& gemms,
                          const std::vector<CollectiveRecord>& collectives,
                          const std::optional<BandwidthRecord>& bandwidth) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["context"] = to_json(ctx);
  j["gemm"] = nlohmann::json::array();
  for (const auto& g : gemms) j["gemm"].push_back(to_json(g));
  j["collectives"] = nlohmann::json::array();
  for (const auto& c : collectives) j["collectives"].push_back(to_json(c));
  if (bandwidth) j["memory_bandwidth"] = to_json(*bandwidth);
  return j;
}

}  // namespace strata::kernels::profiler
