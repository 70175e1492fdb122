// Calibration step 2 (detail/calibration_steps.h): MPI, placement and the device with its
// libraries, then the measurements on every rank at once: the GEMM sweep, copy bandwidth,
// the collectives of every group size the ranks can form and, on the cpu backend with a
// model, the runtime's own non-GEMM kernels (op_benchmark.h) and whole transformer blocks
// (block_benchmark.h). Rank 0 keeps the rows.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "calibration/detail/calibration_steps.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "costmodel/device_profile.h"
#include "kernels/cpu/blas_library.h"
#include "kernels/cpu/cpu_info.h"
#include "kernels/memory_space.h"
#include "kernels/profiler/build_info.h"
#include "kernels/profiler/cpu_gemm_runner.h"
#if defined(STRATA_HAVE_CUDA) && STRATA_HAVE_CUDA
#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/cuda_memory.h"
#include "kernels/cuda/nccl_communicator.h"
#include "kernels/profiler/cuda_gemm_runner.h"
#endif

namespace strata::calibration::detail {

namespace kp = strata::kernels::profiler;
using kernels::GemmDType;

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

namespace {

std::string hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
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

#if defined(STRATA_HAVE_CUDA) && STRATA_HAVE_CUDA
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
#endif

// The device measured on: its GEMM runner and memory, and what it says about itself
// (m.ctx, m.info, m.libs).
struct Device {
  std::unique_ptr<kp::GemmRunner> runner;
  std::unique_ptr<kernels::MemorySpace> memory;
  std::int64_t bandwidth_bytes = 0;  // copy size of the bandwidth measurement
  int cuda_device = 0;
};

Device cpu_device(const CalibrationRequest& f, Measurements& m) {
  Device d;
  const int threads = kernels::configure_blas_threads(m.place.local_size);
  const kernels::CpuInfo cpu = kernels::read_cpu_info();
  const int cores = std::max(1, std::min(threads, cpu.logical_cpus > 0 ? cpu.logical_cpus : 1));
  const double peak_tflops = cores * cpu.peak_gflops_per_core() / 1000.0;
  m.ctx.transport = "mpi";
  m.ctx.device = cpu.host_line();  // model, cores, SIMD, caches: what the numbers were measured on
  m.ctx.blas_threads = threads;
  m.ctx.peak = cpu.peak_derivation(cores);
  m.libs = {{"blas", kernels::blas_version()}, {"mpi", kernels::mpi_library_version()}};
  d.runner = std::make_unique<kp::CpuGemmRunner>(cpu.model_name, peak_tflops);
  d.memory = kernels::host_memory();
  d.bandwidth_bytes = f.quick ? std::int64_t{64} << 20 : std::int64_t{256} << 20;
  m.info.memory_gib = cpu.memory_gib / std::max(1, m.place.local_size);
  m.info.peak_tflops = {{GemmDType::Fp32, peak_tflops}};
  m.info.reserve_gib = 1;
  m.info.reserve_provenance = {{"kind", "estimate"},
                               {"ref", "Open MPI shared-memory buffers, process image and allocator slack per rank"}};
  return d;
}

#if defined(STRATA_HAVE_CUDA) && STRATA_HAVE_CUDA
Device cuda_device(const SweepPlan& plan, Measurements& m) {
  Device d;
  d.cuda_device = m.place.local_rank % kernels::cuda_device_count();
  kernels::cuda_set_device(d.cuda_device);
  const kernels::CudaDeviceInfo dev = kernels::cuda_device_info(d.cuda_device);
  std::map<GemmDType, double> peaks;
  auto sheet = datasheet_for(dev.name);
  if (sheet) {
    for (GemmDType t : kernels::all_gemm_dtypes()) {
      auto it = sheet->peak_tflops.find(costmodel::dtype_from_string(to_string(t)));
      if (it != sheet->peak_tflops.end()) peaks[t] = it->second;
    }
    m.ctx.peak = fmt::format("datasheet profile {} ({})", sheet->name,
                             sheet->source.fields.count("ref") ? sheet->source.fields.at("ref") : sheet->source.kind);
    m.info.reserve_gib = sheet->reserve_gib;
    m.info.reserve_provenance = {{"kind", sheet->reserve_source.kind.empty() ? "estimate" : sheet->reserve_source.kind},
                                 {"ref", fmt::format("copied from the datasheet profile {}", sheet->name)}};
  } else {
    m.ctx.peak = "unknown (no datasheet profile matches this GPU; eff% not shown)";
  }
  m.ctx.transport = "nccl";
  m.ctx.device = dev.name;
  m.libs = {{"cuda", kernels::cuda_library_versions()}, {"mpi", kernels::mpi_library_version()}};
  d.runner = std::make_unique<kp::CudaGemmRunner>(d.cuda_device, peaks);
  d.memory = kernels::cuda_memory(d.cuda_device);
  d.bandwidth_bytes = std::int64_t{1} << 30;
  m.info.memory_gib = dev.memory_gib;
  for (GemmDType t : plan.dtypes)
    if (peaks.count(t)) m.info.peak_tflops.push_back({t, peaks[t]});
  return d;
}
#endif

// MPI, placement, timing policies, the run's context and the device.
Device start(const CalibrationRequest& f, const SweepPlan& plan, Measurements& m) {
  m.load_before = load_average();
  kernels::mpi_init_once(nullptr, nullptr);
  m.place = kernels::mpi_placement();
  m.root = m.place.world_rank == 0;
  m.world = kernels::MpiCommunicator::world();

  // GEMMs are timed in bursts of >= 2 ms so every rank computes at once for the whole
  // sample, as in training (see TimingOptions::min_sample_s).
  m.gemm_timing = f.quick ? kp::TimingOptions{1, 3, 10, 0.1, 2e-3} : kp::TimingOptions{2, 3, 30, 0.3, 2e-3};
  m.gemm_timing.sustain_s = f.sustain_s;
  m.coll_timing = f.quick ? kp::TimingOptions{2, 3, 20, 0.05} : kp::TimingOptions{5, 5, 100, 0.2};

  kp::RunContext& ctx = m.ctx;
  ctx.strata_version = kp::strata_version();
  ctx.commit = kp::build_commit();
  ctx.backend = kernels::to_string(plan.backend);
  ctx.host = m.place.host.empty() ? hostname() : m.place.host;
  ctx.date = kp::utc_timestamp();
  ctx.load_average = m.load_before;
  ctx.ranks = m.place.world_size;
  ctx.nodes = m.place.nodes;
  ctx.gemm_timing = m.gemm_timing;
  ctx.collective_timing = m.coll_timing;

  m.info.name = f.name.empty()
                    ? (is_stdio(f.out) ? std::string(ctx.backend) + "-measured"
                                       : std::filesystem::path(f.out).stem().string())
                    : f.name;
  Device d;
  if (plan.backend == kernels::Backend::Cpu) {
    d = cpu_device(f, m);
  } else {
#if defined(STRATA_HAVE_CUDA) && STRATA_HAVE_CUDA
    d = cuda_device(plan, m);
#endif
  }
  std::vector<std::string> lib_text;
  for (const auto& [k, v] : m.libs) lib_text.push_back(v);
  ctx.libraries = join(lib_text, "; ");
  return d;
}

// The collectives on groups of every size the ranks can form (consecutive ranks).
void sweep_collectives(const SweepPlan& plan, const Device& d, CalibrationProgress& progress, Measurements& m) {
  for (int g : group_sizes(m.place.world_size)) {
    auto sub = kernels::MpiCommunicator::from_groups(consecutive_groups(m.place.world_size, g));
    kp::CollectiveSweepOptions copt;
    copt.max_bytes = plan.max_bytes;
    copt.timing = m.coll_timing;
    copt.groups = m.place.world_size / g;
    const std::string phase = fmt::format("collectives, groups of {}", g);
    std::vector<kp::CollectiveRecord> recs;
    if (plan.backend == kernels::Backend::Cpu) {
      recs = kp::run_collective_sweep(*sub, *d.memory, *sub, copt, progress.phase(phase));
    } else {
#if defined(STRATA_HAVE_CUDA) && STRATA_HAVE_CUDA
      kernels::NcclCommunicator nccl(*sub, d.cuda_device);
      recs = kp::run_collective_sweep(nccl, *d.memory, *sub, copt, progress.phase(phase));
#endif
    }
    if (m.root) m.collectives.insert(m.collectives.end(), recs.begin(), recs.end());
    m.world->barrier();
  }
}

// The runtime's own non-GEMM kernels (cpu backend: they are what `strata train` runs),
// timed on every rank at once like the GEMMs; rank 0's rows go into the op_table.
void benchmark_runtime_ops(const CalibrationRequest& f, const SweepPlan& plan, CalibrationProgress& progress,
                           Measurements& m) {
  if (!(plan.backend == kernels::Backend::Cpu && !plan.graphs.empty())) return;
  OpBenchmarkOptions& oopt = m.ops_options;
  oopt.micro_batches = f.quick ? std::vector<std::int64_t>{1, 4} : std::vector<std::int64_t>{1, 4, 16};
  if (std::find(oopt.micro_batches.begin(), oopt.micro_batches.end(), f.micro_batch) == oopt.micro_batches.end())
    oopt.micro_batches.push_back(f.micro_batch);
  oopt.timing.budget_s = f.quick ? 0.02 : 0.1;
  oopt.timing.min_sample_s = 1e-3;
  for (const auto& g : plan.graphs) {
    const models::ModelSpec& spec = g.spec();
    oopt.tp_degrees.clear();
    for (int tp : f.tp_degrees)
      if (spec.heads % tp == 0 && spec.kv_heads % tp == 0 && spec.ffn % tp == 0) oopt.tp_degrees.push_back(tp);
    if (oopt.tp_degrees.empty()) continue;
    auto phase = progress.phase(fmt::format("runtime ops, {}", spec.name));
    m.world->barrier();
    auto rows = benchmark_ops(spec, oopt, [&](int done, int total) {
      if (phase) phase(static_cast<std::size_t>(done), static_cast<std::size_t>(total), spec.name);
    });
    if (m.root) m.op_rows.insert(m.op_rows.end(), rows.begin(), rows.end());
  }
  m.world->barrier();
}

// The runtime's whole transformer block at the same shapes (block_table), all ranks at
// once: what the block costs beyond its kernels (costmodel/block_table.h).
void benchmark_runtime_blocks(const CalibrationRequest& f, const SweepPlan& plan, CalibrationProgress& progress,
                              Measurements& m) {
  if (!(plan.backend == kernels::Backend::Cpu && !plan.graphs.empty())) return;
  BlockBenchmarkOptions& bopt = m.blocks_options;
  bopt.micro_batches = m.ops_options.micro_batches;
  bopt.timing.budget_s = f.quick ? 0.05 : 0.2;
  bopt.timing.min_sample_s = f.quick ? 5e-3 : 20e-3;
  bopt.sync = m.world.get();
  // Real TP groups of consecutive ranks, as the collective sweep forms them.
  std::map<int, std::unique_ptr<kernels::MpiCommunicator>> tp_groups;
  for (int g : group_sizes(m.place.world_size)) {
    if (g >= 2) tp_groups[g] = kernels::MpiCommunicator::from_groups(consecutive_groups(m.place.world_size, g));
  }
  bopt.tp_group = [&](int tp) -> kernels::Communicator* {
    auto it = tp_groups.find(tp);
    return it == tp_groups.end() ? nullptr : it->second.get();
  };
  for (const auto& g : plan.graphs) {
    const models::ModelSpec& spec = g.spec();
    bopt.tp_degrees.clear();
    for (int tp : f.tp_degrees)
      if (spec.heads % tp == 0 && spec.kv_heads % tp == 0 && spec.ffn % tp == 0 && spec.hidden % tp == 0)
        bopt.tp_degrees.push_back(tp);
    if (bopt.tp_degrees.empty()) continue;
    auto phase = progress.phase(fmt::format("runtime blocks, {}", spec.name));
    m.world->barrier();
    auto rows = benchmark_blocks(spec, bopt, [&](int done, int total) {
      if (phase) phase(static_cast<std::size_t>(done), static_cast<std::size_t>(total), spec.name);
    }, &m.block_skipped);
    if (m.root) m.block_rows.insert(m.block_rows.end(), rows.begin(), rows.end());
  }
  m.world->barrier();
  bopt.tp_group = {};  // the groups end here
  bopt.sync = nullptr;
}

}  // namespace

Measurements measure(const CalibrationRequest& f, const CalibrationOutput& io, const SweepPlan& plan) {
  Measurements m;
  Device d = start(f, plan, m);
  CalibrationProgress progress(m.root, io.progress_tty);

  kp::GemmSweepOptions gopt;
  gopt.dtypes = plan.dtypes;
  gopt.timing = m.gemm_timing;
  gopt.budget_s = f.max_gemm_seconds;
  m.gemms = kp::run_gemm_sweep(*d.runner, plan.problems, gopt, m.world.get(), progress.phase("gemm"));
  d.runner.reset();

  if (auto fn = progress.phase("memory bandwidth")) fn(0, 1, kp::human_bytes(d.bandwidth_bytes) + " copy");
  m.bw = kp::measure_copy_bandwidth(*d.memory, d.bandwidth_bytes, m.gemm_timing, m.world.get());

  sweep_collectives(plan, d, progress, m);
  benchmark_runtime_ops(f, plan, progress, m);
  benchmark_runtime_blocks(f, plan, progress, m);
  progress.finish();
  return m;
}

}  // namespace strata::calibration::detail
