// The calibration procedure (calibration/calibrate.h): input checks on every rank before
// MPI starts and before anything is measured; then the GEMM, bandwidth and collective
// sweeps, the runtime's op and block benchmarks (cpu backend, with --model), and on
// rank 0 the efficiencies, provenance, report and profile YAML.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <exception>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "calibration/block_benchmark.h"
#include "calibration/calibrate.h"
#include "calibration/op_benchmark.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "costmodel/device_profile.h"
#include "kernels/backend.h"
#include "kernels/cpu/blas_library.h"
#include "kernels/cpu/cpu_info.h"
#include "kernels/cpu/mpi_communicator.h"
#include "kernels/cpu/mpi_placement.h"
#include "kernels/memory_space.h"
#include "kernels/profiler/build_info.h"
#include "kernels/profiler/collective_sweep.h"
#include "kernels/profiler/cpu_gemm_runner.h"
#include "kernels/profiler/gemm_problems.h"
#include "kernels/profiler/gemm_sweep.h"
#include "kernels/profiler/memory_bandwidth.h"
#include "kernels/profiler/profile_writer.h"
#include "kernels/profiler/sweep_report.h"
#include "models/model_graph.h"
#include "models/model_spec.h"
#if defined(STRATA_HAVE_CUDA) && STRATA_HAVE_CUDA
#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/cuda_memory.h"
#include "kernels/cuda/nccl_communicator.h"
#include "kernels/profiler/cuda_gemm_runner.h"
#endif

namespace strata::calibration {

namespace kp = strata::kernels::profiler;
using kernels::GemmDType;

namespace {

// "1073741824", "64M", "1GiB", "4k" -> bytes.
std::int64_t parse_bytes(const std::string& text, const char* flag) {
  std::size_t pos = 0;
  long double value = 0;
  try {
    value = std::stold(text, &pos);
  } catch (const std::exception&) {
    input_error("{} ({}) must be a byte count such as 1048576, 64M or 1G", flag, text);
  }
  std::string unit = text.substr(pos);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  long double scale = 1;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") scale = 1024.0L;
  else if (unit == "m" || unit == "mb" || unit == "mib") scale = 1024.0L * 1024;
  else if (unit == "g" || unit == "gb" || unit == "gib") scale = 1024.0L * 1024 * 1024;
  else input_error("{} ({}): unknown unit '{}' (expected B, K, M or G)", flag, text, unit);
  long double bytes = value * scale;
  if (!(bytes >= 8) || bytes > 16.0L * 1024 * 1024 * 1024)
    input_error("{} ({}) must be between 8 B and 16 GiB", flag, text);
  return static_cast<std::int64_t>(bytes);
}


std::string hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// 1-minute load average (/proc/loadavg), recorded so a reader of the profile can tell
// whether other work competed for the cores while it was measured.
std::string load_average() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (!f) return "unknown";
  double one = 0;
  int n = std::fscanf(f, "%lf", &one);
  std::fclose(f);
  return n == 1 ? fmt::format("{:.2f}", one) : "unknown";
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// Progress on stderr (rank 0 only): a bar redrawn in place on a terminal, otherwise a
// line per phase and per 25%.
class CalibrationProgress {
 public:
  CalibrationProgress(bool enabled, bool tty) : enabled_(enabled), tty_(tty) {}
  kp::ProgressFn phase(const std::string& name) {
    if (!enabled_) return {};
    return [this, name](std::size_t done, std::size_t total, const std::string& label) {
      draw(name, done, total, label);
    };
  }
  void finish() {
    if (enabled_ && tty_ && drawn_) std::fputs("\r\033[K", stderr);
  }

 private:
  void draw(const std::string& phase, std::size_t done, std::size_t total, const std::string& label) {
    int pct = total ? static_cast<int>(100 * done / total) : 100;
    if (tty_) {
      int fill = pct / 5;
      std::string bar(static_cast<std::size_t>(fill), '#');
      bar.resize(20, '.');
      fmt::print(stderr, "\r\033[K[{}] {:3d}% {}: {}", bar, pct, phase, label);
      drawn_ = true;
    } else if (phase != last_phase_ || pct / 25 != last_quarter_) {
      fmt::print(stderr, "# progress: {} {:3d}% ({})\n", phase, pct, label);
      last_phase_ = phase;
      last_quarter_ = pct / 25;
    }
    std::fflush(stderr);
  }
  bool enabled_, tty_, drawn_ = false;
  std::string last_phase_;
  int last_quarter_ = -1;
};

// Group sizes to sweep: the whole world, then every power of two >= 2 below it that
// divides it (e.g. 8 -> 8, 4, 2). One rank: only the trivial group of one.
std::vector<int> group_sizes(int world) {
  std::vector<int> out{world};
  for (int g = 2; g < world; g *= 2)
    if (world % g == 0) out.push_back(g);
  std::sort(out.begin(), out.end());
  return out;
}

// The world split into groups of g consecutive ranks (g divides world).
std::vector<std::vector<int>> consecutive_groups(int world, int g) {
  std::vector<std::vector<int>> groups;
  for (int start = 0; start < world; start += g) {
    groups.emplace_back();
    for (int r = start; r < start + g; ++r) groups.back().push_back(r);
  }
  return groups;
}

// Datasheet peaks for a GPU, from the costmodel catalog entry whose name's first token
// appears in the device name ("NVIDIA H200" -> h200-sxm-141gb).
std::optional<costmodel::DeviceProfile> datasheet_for(const std::string& device_name) {
  std::string lower = device_name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& name : costmodel::device_catalog_names()) {
    std::string token = name.substr(0, name.find('-'));
    if (token.size() >= 3 && lower.find(token) != std::string::npos) return costmodel::load_device_profile(name);
  }
  return std::nullopt;
}

}  // namespace

void calibrate(const CalibrationRequest& f, const CalibrationOutput& io) {
  // ---- Input checks: identical on every rank, before MPI and before measuring. ----
  const kernels::Backend backend = kernels::backend_from_string(f.backend);
  if (!kernels::backend_available(backend))
    input_error("--backend {}: this strata was built without the CUDA backend (configure with a CUDA "
                "toolkit and NCCL, e.g. `cmake --preset cuda`)",
                f.backend);
#if defined(STRATA_HAVE_CUDA) && STRATA_HAVE_CUDA
  if (backend == kernels::Backend::Cuda && kernels::cuda_device_count() == 0)
    input_error("--backend cuda: {}", kernels::cuda_unavailable_reason());
#endif
  if (f.out.empty()) input_error("--out is required (the profile YAML to write, or - for stdout)");
  if (io.check_out) io.check_out(f.out);
  for (int tp : f.tp_degrees)
    if (tp < 1 || tp > 1024) input_error("--tp-degrees ({}) must be between 1 and 1024", tp);
  if (f.micro_batch < 1 || f.micro_batch > 4096)
    input_error("--micro-batch ({}) must be between 1 and 4096", f.micro_batch);
  const std::int64_t max_bytes =
      f.max_bytes.empty() ? (f.quick ? std::int64_t{64} << 20 : std::int64_t{1} << 30)
                          : parse_bytes(f.max_bytes, "--max-bytes");
  const std::int64_t max_dim = f.max_gemm_dim > 0 ? f.max_gemm_dim : (f.quick ? 1024 : 4096);
  if (max_dim > 65536) input_error("--max-gemm-dim ({}) must be at most 65536", max_dim);
  std::vector<GemmDType> dtypes;
  for (const auto& d : f.dtypes) dtypes.push_back(kernels::gemm_dtype_from_string(d));
  if (dtypes.empty())
    dtypes = backend == kernels::Backend::Cpu ? std::vector<GemmDType>{GemmDType::Fp32}
                                              : kernels::all_gemm_dtypes();
  if (backend == kernels::Backend::Cpu)
    for (GemmDType d : dtypes)
      if (d != GemmDType::Fp32) input_error("--dtypes ({}): the cpu backend runs fp32 only", to_string(d));
  std::vector<models::ModelGraph> graphs;
  for (const auto& m : f.models) {
    models::ModelSpec spec;
    try {
      spec = models::load_model(m);
    } catch (const InputError& e) {
      input_error("--model: {}", e.what());
    }
    graphs.push_back(models::ModelGraph::build(spec, f.micro_batch));
  }
  std::vector<kp::GemmProblem> problems = kp::square_gemm_problems(128, max_dim);
  for (const auto& g : graphs) {
    auto mp = kp::model_gemm_problems(g, f.tp_degrees);
    problems.insert(problems.end(), mp.begin(), mp.end());
    auto ap = kp::attention_gemm_problems(g);
    problems.insert(problems.end(), ap.begin(), ap.end());
  }
  problems = kp::dedupe_gemm_problems(std::move(problems));

  // ---- MPI, placement, libraries. ----
  const std::string load_before = load_average();
  kernels::mpi_init_once(nullptr, nullptr);
  const kernels::MpiPlacement place = kernels::mpi_placement();
  const bool root = place.world_rank == 0;
  auto world = kernels::MpiCommunicator::world();
  CalibrationProgress progress(root, io.progress_tty);

  // GEMMs are timed in bursts of >= 2 ms so every rank computes at once for the whole
  // sample, as in training (see TimingOptions::min_sample_s).
  kp::TimingOptions gemm_timing = f.quick ? kp::TimingOptions{1, 3, 10, 0.1, 2e-3} : kp::TimingOptions{2, 3, 30, 0.3, 2e-3};
  gemm_timing.sustain_s = f.sustain_s;
  kp::TimingOptions coll_timing = f.quick ? kp::TimingOptions{2, 3, 20, 0.05} : kp::TimingOptions{5, 5, 100, 0.2};

  kp::RunContext ctx;
  ctx.strata_version = kp::strata_version();
  ctx.commit = kp::build_commit();
  ctx.backend = kernels::to_string(backend);
  ctx.host = place.host.empty() ? hostname() : place.host;
  ctx.date = kp::utc_timestamp();
  ctx.load_average = load_before;
  ctx.ranks = place.world_size;
  ctx.nodes = place.nodes;
  ctx.gemm_timing = gemm_timing;
  ctx.collective_timing = coll_timing;

  kp::ProfileInfo info;
  info.name = f.name.empty()
                  ? (is_stdio(f.out) ? std::string(ctx.backend) + "-measured"
                                     : std::filesystem::path(f.out).stem().string())
                  : f.name;
  std::unique_ptr<kp::GemmRunner> runner;
  std::unique_ptr<kernels::MemorySpace> memory;
  std::int64_t bandwidth_bytes = 0;
  std::vector<std::pair<std::string, std::string>> libs;
  int cuda_device = 0;
  (void)cuda_device;

  if (backend == kernels::Backend::Cpu) {
    const int threads = kernels::configure_blas_threads(place.local_size);
    const kernels::CpuInfo cpu = kernels::read_cpu_info();
    const int cores = std::max(1, std::min(threads, cpu.logical_cpus > 0 ? cpu.logical_cpus : 1));
    const double peak_tflops = cores * cpu.peak_gflops_per_core() / 1000.0;
    ctx.transport = "mpi";
    ctx.device = cpu.model_name;
    ctx.blas_threads = threads;
    ctx.peak = cpu.peak_derivation(cores);
    libs = {{"blas", kernels::blas_version()}, {"mpi", kernels::mpi_library_version()}};
    runner = std::make_unique<kp::CpuGemmRunner>(cpu.model_name, peak_tflops);
    memory = kernels::host_memory();
    bandwidth_bytes = f.quick ? std::int64_t{64} << 20 : std::int64_t{256} << 20;
    info.memory_gib = cpu.memory_gib / std::max(1, place.local_size);
    info.peak_tflops = {{GemmDType::Fp32, peak_tflops}};
    info.reserve_gib = 1;
    info.reserve_provenance = {{"kind", "estimate"},
                               {"ref", "Open MPI shared-memory buffers, process image and allocator slack per rank"}};
  } else {
#if defined(STRATA_HAVE_CUDA) && STRATA_HAVE_CUDA
    cuda_device = place.local_rank % kernels::cuda_device_count();
    kernels::cuda_set_device(cuda_device);
    const kernels::CudaDeviceInfo dev = kernels::cuda_device_info(cuda_device);
    std::map<GemmDType, double> peaks;
    auto sheet = datasheet_for(dev.name);
    if (sheet) {
      for (GemmDType d : kernels::all_gemm_dtypes()) {
        auto it = sheet->peak_tflops.find(costmodel::dtype_from_string(to_string(d)));
        if (it != sheet->peak_tflops.end()) peaks[d] = it->second;
      }
      ctx.peak = fmt::format("datasheet profile {} ({})", sheet->name,
                             sheet->source.fields.count("ref") ? sheet->source.fields.at("ref") : sheet->source.kind);
      info.reserve_gib = sheet->reserve_gib;
      info.reserve_provenance = {{"kind", sheet->reserve_source.kind.empty() ? "estimate" : sheet->reserve_source.kind},
                                 {"ref", fmt::format("copied from the datasheet profile {}", sheet->name)}};
    } else {
      ctx.peak = "unknown (no datasheet profile matches this GPU; eff% not shown)";
    }
    ctx.transport = "nccl";
    ctx.device = dev.name;
    libs = {{"cuda", kernels::cuda_library_versions()}, {"mpi", kernels::mpi_library_version()}};
    runner = std::make_unique<kp::CudaGemmRunner>(cuda_device, peaks);
    memory = kernels::cuda_memory(cuda_device);
    bandwidth_bytes = std::int64_t{1} << 30;
    info.memory_gib = dev.memory_gib;
    for (GemmDType d : dtypes)
      if (peaks.count(d)) info.peak_tflops.push_back({d, peaks[d]});
#endif
  }
  std::vector<std::string> lib_text;
  for (const auto& [k, v] : libs) lib_text.push_back(v);
  ctx.libraries = join(lib_text, "; ");

  // ---- Measure. ----
  kp::GemmSweepOptions gopt;
  gopt.dtypes = dtypes;
  gopt.timing = gemm_timing;
  auto gemms = kp::run_gemm_sweep(*runner, problems, gopt, world.get(), progress.phase("gemm"));
  runner.reset();

  if (auto fn = progress.phase("memory bandwidth")) fn(0, 1, kp::human_bytes(bandwidth_bytes) + " copy");
  kp::BandwidthRecord bw = kp::measure_copy_bandwidth(*memory, bandwidth_bytes, gemm_timing, world.get());

  std::vector<kp::CollectiveRecord> collectives;
  for (int g : group_sizes(place.world_size)) {
    auto sub = kernels::MpiCommunicator::from_groups(consecutive_groups(place.world_size, g));
    kp::CollectiveSweepOptions copt;
    copt.max_bytes = max_bytes;
    copt.timing = coll_timing;
    copt.groups = place.world_size / g;
    const std::string phase = fmt::format("collectives, groups of {}", g);
    std::vector<kp::CollectiveRecord> recs;
    if (backend == kernels::Backend::Cpu) {
      recs = kp::run_collective_sweep(*sub, *memory, *sub, copt, progress.phase(phase));
    } else {
#if defined(STRATA_HAVE_CUDA) && STRATA_HAVE_CUDA
      kernels::NcclCommunicator nccl(*sub, cuda_device);
      recs = kp::run_collective_sweep(nccl, *memory, *sub, copt, progress.phase(phase));
#endif
    }
    if (root) collectives.insert(collectives.end(), recs.begin(), recs.end());
    world->barrier();
  }
  // The runtime's own non-GEMM kernels (cpu backend: they are what `strata train` runs),
  // timed on every rank at once like the GEMMs; rank 0's rows go into the op_table.
  std::vector<OpBenchmarkRow> op_rows;
  OpBenchmarkOptions oopt;
  if (backend == kernels::Backend::Cpu && !graphs.empty()) {
    oopt.micro_batches = f.quick ? std::vector<std::int64_t>{1, 4} : std::vector<std::int64_t>{1, 4, 16};
    if (std::find(oopt.micro_batches.begin(), oopt.micro_batches.end(), f.micro_batch) == oopt.micro_batches.end())
      oopt.micro_batches.push_back(f.micro_batch);
    oopt.timing.budget_s = f.quick ? 0.02 : 0.1;
    oopt.timing.min_sample_s = 1e-3;
    for (const auto& g : graphs) {
      const models::ModelSpec& spec = g.spec();
      oopt.tp_degrees.clear();
      for (int tp : f.tp_degrees)
        if (spec.heads % tp == 0 && spec.kv_heads % tp == 0 && spec.ffn % tp == 0) oopt.tp_degrees.push_back(tp);
      if (oopt.tp_degrees.empty()) continue;
      auto phase = progress.phase(fmt::format("runtime ops, {}", spec.name));
      world->barrier();
      auto rows = benchmark_ops(spec, oopt, [&](int done, int total) {
        if (phase) phase(static_cast<std::size_t>(done), static_cast<std::size_t>(total), spec.name);
      });
      if (root) op_rows.insert(op_rows.end(), rows.begin(), rows.end());
    }
    world->barrier();
  }
  // The runtime's whole transformer block at the same shapes (block_table), all ranks at
  // once: what the block costs beyond its kernels (costmodel/block_table.h).
  std::vector<BlockBenchmarkRow> block_rows;
  std::vector<std::string> block_skipped;
  BlockBenchmarkOptions bopt;
  if (backend == kernels::Backend::Cpu && !graphs.empty()) {
    bopt.micro_batches = oopt.micro_batches;
    bopt.timing.budget_s = f.quick ? 0.05 : 0.2;
    bopt.timing.min_sample_s = f.quick ? 5e-3 : 20e-3;
    bopt.sync = world.get();
    // Real TP groups of consecutive ranks, as the collective sweep forms them.
    std::map<int, std::unique_ptr<kernels::MpiCommunicator>> tp_groups;
    for (int g : group_sizes(place.world_size)) {
      if (g >= 2) tp_groups[g] = kernels::MpiCommunicator::from_groups(consecutive_groups(place.world_size, g));
    }
    bopt.tp_group = [&](int tp) -> kernels::Communicator* {
      auto it = tp_groups.find(tp);
      return it == tp_groups.end() ? nullptr : it->second.get();
    };
    for (const auto& g : graphs) {
      const models::ModelSpec& spec = g.spec();
      bopt.tp_degrees.clear();
      for (int tp : f.tp_degrees)
        if (spec.heads % tp == 0 && spec.kv_heads % tp == 0 && spec.ffn % tp == 0 && spec.hidden % tp == 0)
          bopt.tp_degrees.push_back(tp);
      if (bopt.tp_degrees.empty()) continue;
      auto phase = progress.phase(fmt::format("runtime blocks, {}", spec.name));
      world->barrier();
      auto rows = benchmark_blocks(spec, bopt, [&](int done, int total) {
        if (phase) phase(static_cast<std::size_t>(done), static_cast<std::size_t>(total), spec.name);
      }, &block_skipped);
      if (root) block_rows.insert(block_rows.end(), rows.begin(), rows.end());
    }
    world->barrier();
  }
  progress.finish();

  // ---- Report and write (rank 0). ----
  std::size_t failed = 0;
  for (const auto& g : gemms)
    if (!g.ok() && g.error.rfind("skipped", 0) != 0) ++failed;
  for (const auto& c : collectives)
    if (!c.ok()) ++failed;
  // Rank 0 reports and writes; a failure there (say, the disk filled up) must still
  // reach the other ranks, which wait in the final reduction below.
  std::exception_ptr root_error;
  if (root) try {
    // The efficiencies describe the dtype training runs in (fp32 on cpu, bf16 on cuda).
    GemmDType main_dtype = backend == kernels::Backend::Cpu ? GemmDType::Fp32 : GemmDType::Bf16;
    if (std::find(dtypes.begin(), dtypes.end(), main_dtype) == dtypes.end()) main_dtype = dtypes.front();
    info.compute_dtype = to_string(main_dtype);
    if (info.peak_tflops.empty()) {
      // No datasheet peak for this device: the profile format needs one, so the best
      // measured throughput per dtype stands in (and says so).
      for (GemmDType d : dtypes) {
        double best = 0;
        for (const auto& g : gemms)
          if (g.ok() && g.dtype == d) best = std::max(best, g.tflops);
        if (best > 0) info.peak_tflops.push_back({d, best});
      }
      for (auto& g : gemms)
        for (const auto& [d, peak] : info.peak_tflops)
          if (g.dtype == d && peak > 0) g.efficiency = g.tflops / peak;
      ctx.peak = "no datasheet profile matches this device: peak_tflops = best measured TFLOP/s per dtype";
    }
    double gemm_eff = kp::median_gemm_efficiency(gemms, main_dtype);
    double attn_eff = kp::median_gemm_efficiency(gemms, main_dtype, 0, "attention");
    info.gemm_efficiency = gemm_eff > 0 ? std::min(gemm_eff, 1.0) : 0.8;
    info.attention_efficiency = attn_eff > 0 ? std::min(attn_eff, 1.0) : info.gemm_efficiency / 2;
    info.memory_efficiency = 1.0;
    info.memory_bandwidth_gbps = bw.gbps;
    // The format caps efficiencies at 1; a CPU whose cores run above the /proc/cpuinfo
    // clock (boost) measures more than 100% of that peak, and the source says so.
    auto capped = [](double e) {
      return e > 1.0 ? fmt::format(" = {:.3f}, capped at 1 (the peak uses the /proc/cpuinfo clock; the cores ran faster)", e)
                     : fmt::format(" = {:.3f}", e);
    };
    info.efficiency_provenance = {
        {"gemm", gemm_eff > 0 ? fmt::format("median achieved/peak of the measured {} GEMMs with >= 1 GFLOP{}",
                                            to_string(main_dtype), capped(gemm_eff))
                              : std::string("no GEMM measured: default 0.8 (estimate)")},
        {"attention", attn_eff > 0 ? fmt::format("median achieved/peak of the per-head attention GEMMs (QK^T and AV "
                                                 "of the --model shapes; a proxy: softmax and masking not included){}",
                                                 capped(attn_eff))
                                   : std::string("no --model given: half the GEMM efficiency (estimate)")},
        {"memory", "1.0: memory_bandwidth_gbps is itself an achieved (measured) copy bandwidth"},
        {"peak", ctx.peak}};
    std::vector<std::string> model_names;
    for (const auto& g : graphs) model_names.push_back(g.spec().name);
    std::vector<std::string> tps;
    for (int tp : f.tp_degrees) tps.push_back(std::to_string(tp));
    info.provenance = {{"tool", "strata calibrate"},
                       {"strata", ctx.strata_version},
                       {"commit", ctx.commit},
                       {"host", ctx.host},
                       {"device", ctx.device},
                       {"backend", ctx.backend}};
    for (const auto& kv : libs) info.provenance.push_back(kv);
    info.provenance.push_back({"ranks", fmt::format("{} x {} node(s)", ctx.ranks, ctx.nodes)});
    if (backend == kernels::Backend::Cpu)
      info.provenance.push_back({"blas_threads_per_rank", std::to_string(ctx.blas_threads)});
    info.provenance.push_back({"date", ctx.date});
    info.provenance.push_back(
        {"load_average", fmt::format("{} before, {} after (1-minute, /proc/loadavg; {} logical CPUs)", load_before,
                                     load_average(), std::thread::hardware_concurrency())});
    info.provenance.push_back(
        {"command", fmt::format("strata calibrate --backend {} --out {}{}{}{}{}", ctx.backend, f.out,
                                model_names.empty() ? "" : " --model " + join(model_names, ","),
                                model_names.empty() ? "" : " --tp-degrees " + join(tps, ","),
                                f.quick ? " --quick" : "",
                                f.max_bytes.empty() ? "" : " --max-bytes " + f.max_bytes)});
    info.provenance.push_back(
        {"method", "validate-then-time: each GEMM is checked against a double-precision reference and each "
                   "collective against a closed form before timing; warm-up, then timed repetitions after "
                   "a barrier (GEMMs and runtime ops: bursts of back-to-back runs, all ranks busy at once); "
                   "time = median over repetitions of the slowest rank"});
    info.gemm_provenance = {
        {"shapes", fmt::format("square 128..{}{}", max_dim,
                               model_names.empty() ? "" : fmt::format("; sharded fwd/dgrad/wgrad of {} at tp {}, micro-batch {}",
                                                                      join(model_names, ", "), join(tps, ","), f.micro_batch))},
        {"timing", kp::describe(gemm_timing)},
        {"concurrency", fmt::format("all {} rank(s) run the same GEMM at once", ctx.ranks)}};
    info.collective_provenance = {
        {"transport", ctx.transport},
        {"sizes", fmt::format("8 B .. {}, powers of two, fp32", kp::human_bytes(max_bytes))},
        {"busbw", "nccl-tests: all_reduce 2(n-1)/n, all_gather/reduce_scatter/all_to_all (n-1)/n, others 1"},
        {"timing", kp::describe(coll_timing)}};
    info.comments = {
        fmt::format("Measured device profile written by `strata calibrate` ({}).", ctx.date),
        fmt::format("{} on {} ({} rank(s) x {} node(s)); regenerate with the command in source.command.",
                    ctx.device, ctx.host, ctx.ranks, ctx.nodes),
        "Only rows that passed validation are listed; see source fields for method and libraries."};

    std::string report;
    if (f.format == "json") {
      auto j = kp::sweep_json(ctx, gemms, collectives, bw);
      j["profile"] = {{"name", info.name}, {"path", f.out}, {"gemm_efficiency", info.gemm_efficiency},
                      {"attention_efficiency", info.attention_efficiency},
                      {"memory_bandwidth_gbps", info.memory_bandwidth_gbps}};
      report = j.dump(2) + "\n";
    } else {
      report = kp::format_gemm_table(ctx, gemms);
      report += fmt::format("#\n# memory bandwidth per rank (copy of {}, all ranks at once): {:.2f} GB/s "
                            "(median of {}, p10 {:.0f} us, p90 {:.0f} us)\n#\n",
                            kp::human_bytes(bw.bytes), bw.gbps, bw.time.reps, bw.time.p10_us, bw.time.p90_us);
      report += kp::format_collective_table(ctx, collectives);
      report += fmt::format("# profile: {} -> {}\n", info.name, f.out);
    }
    std::string yaml = kp::profile_to_yaml(info, gemms, collectives);
    if (!op_rows.empty()) {
      std::vector<costmodel::OpSample> samples;
      std::vector<std::string> mbs;
      for (const auto& r : op_rows) samples.push_back(r.sample);
      for (auto mb : oopt.micro_batches) mbs.push_back(std::to_string(mb));
      costmodel::Provenance src{"measured",
                                {{"tool", "strata calibrate"},
                                 {"commit", ctx.commit},
                                 {"host", ctx.host},
                                 {"date", ctx.date},
                                 {"kernels", "the runtime's fp32 CPU kernels (runtime/), as strata train runs them"},
                                 {"shapes", fmt::format("one block and the loss of {} at tp {}, micro-batch {}",
                                                        join(model_names, ", "), join(tps, ","), join(mbs, ","))},
                                 {"work", "costmodel::op_work: bytes moved (fp32), or attention matmul FLOPs per rank"},
                                 {"timing", fmt::format("{}; rank 0 of {} running at once",
                                                        kp::describe(oopt.timing), ctx.ranks)}}};
      yaml += costmodel::op_table_yaml(samples, src);
      if (f.format != "json") {
        report += "#\n# runtime ops (non-GEMM kernels of strata train; work = bytes, attention: FLOPs)\n";
        report += fmt::format("# {:<16} {:<14} {:>14} {:>12} {:>12}\n", "op", "shape", "work", "fwd_us", "bwd_us");
        for (const auto& r : op_rows)
          report += fmt::format("  {:<16} {:<14} {:>14.0f} {:>12.2f} {:>12.2f}\n", r.sample.op, r.shape,
                                r.sample.work, r.sample.fwd_us, r.sample.bwd_us);
      }
    }
    if (!block_rows.empty()) {
      std::vector<costmodel::BlockSample> samples;
      std::vector<std::string> mbs;
      for (const auto& r : block_rows) samples.push_back(r.sample);
      for (auto mb : bopt.micro_batches) mbs.push_back(std::to_string(mb));
      costmodel::Provenance src{
          "measured",
          {{"tool", "strata calibrate"},
           {"commit", ctx.commit},
           {"host", ctx.host},
           {"date", ctx.date},
           {"kernels", "runtime::TransformerBlock<float> forward + backward, as strata train runs it; TP "
                       "collectives replaced by local stand-ins (charged separately)"},
           {"shapes", fmt::format("{} at tp {} (with and without sequence parallelism), micro-batch {}",
                                  join(model_names, ", "), join(tps, ","), join(mbs, ","))},
           {"timing", fmt::format("{}; blocks chained like a model chunk; rank 0 of {} running at once",
                                  kp::describe(bopt.timing), ctx.ranks)}}};
      yaml += costmodel::block_table_yaml(samples, src);
      if (f.format != "json") {
        report += "#\n# runtime blocks (one transformer block of strata train, fwd/bwd per micro-batch, no TP comm)\n";
        report += "#   (with tp: the same with a real TP group of consecutive ranks, all groups at once)\n";
        report += fmt::format("# {:<12} {:<16} {:>10} {:>10} {:>14} {:>14}\n", "model", "shape", "fwd_us", "bwd_us",
                              "fwd_with_tp_us", "bwd_with_tp_us");
        for (const auto& r : block_rows) {
          const bool tp = r.sample.fwd_with_tp_us > 0;
          report += fmt::format("  {:<12} {:<16} {:>10.1f} {:>10.1f} {:>14} {:>14}\n", r.model, r.shape, r.sample.fwd_us,
                                r.sample.bwd_us, tp ? fmt::format("{:.1f}", r.sample.fwd_with_tp_us) : "-",
                                tp ? fmt::format("{:.1f}", r.sample.bwd_with_tp_us) : "-");
        }
      }
    }
    for (const auto& s : block_skipped) report += "# skipped: " + s + "\n";
    if (io.emit) io.emit(report, yaml);
    for (const auto& g : gemms)
      if (!g.ok() && g.error.rfind("skipped", 0) != 0)
        fmt::print(stderr, "error: gemm {}x{}x{} {}: {} (left out of the profile)\n", g.m, g.n, g.k,
                   to_string(g.dtype), g.error);
    for (const auto& c : collectives)
      if (!c.ok())
        fmt::print(stderr, "error: {} {} B on {} ranks: {} (left out of the profile)\n", to_string(c.collective),
                   c.bytes, c.ranks, c.error);
  } catch (...) {
    root_error = std::current_exception();
  }
  // Every rank learns whether any row failed or rank 0 could not finish, so all ranks
  // leave together with the same outcome.
  float status[2] = {root ? static_cast<float>(failed) : 0.0f, root_error ? 1.0f : 0.0f};
  world->all_reduce_sum(status, 2);
  if (root_error) std::rethrow_exception(root_error);
  // Rank 0 says what went wrong; the other ranks only fail with it.
  if (status[1] > 0) throw ReportedByAnotherRank(kExitInternal);
  const float failed_all = status[0];
  if (failed_all > 0 && !root) throw ReportedByAnotherRank(kExitInternal);
  if (failed_all > 0)
    throw DeviceError(fmt::format("{} measurement(s) failed validation and were left out of {}",
                                  static_cast<long>(failed_all), f.out));
}

}  // namespace strata::calibration
