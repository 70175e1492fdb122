// CpuInfo: the host CPU as /proc/cpuinfo describes it, and its fp32 peak derived as
// cores x GHz x FLOP/cycle. FLOP/cycle per core comes from the SIMD flags:
//   AVX-512 (avx512f) with two 512-bit FMA pipes: 16 lanes x 2 (FMA) x 2 pipes = 64
//     (Intel Xeon Skylake-SP and later, AMD Zen 5 / family 26 and later);
//   AVX-512 on AMD Zen 4 (family 25): 512-bit ops issue as two 256-bit halves, so
//     the throughput is that of AVX2 = 32;
//   AVX2 + FMA: 8 lanes x 2 (FMA) x 2 pipes = 32;
//   AVX without FMA: one 8-lane add + one 8-lane multiply per cycle = 16;
//   otherwise SSE: 4 lanes x 2 = 8.
// The clock is /proc/cpuinfo's "cpu MHz" (the current or nominal clock; turbo can push
// measured efficiency slightly above 100%).
#pragma once
#include <string>

namespace strata::kernels {

struct CpuInfo {
  std::string model_name;      // "AMD EPYC 9654 96-Core Processor"
  std::string vendor;          // "AuthenticAMD", "GenuineIntel"
  int family = 0;
  int model = 0;
  int logical_cpus = 0;        // processor entries
  double ghz = 0;              // from "cpu MHz" (first processor)
  std::string simd;            // "avx512", "avx512 (256-bit datapath)", "avx2+fma", "avx", "sse"
  int fp32_flops_per_cycle = 0;  // per core
  double memory_gib = 0;       // MemTotal of /proc/meminfo (0 when not read)
  // Data caches of the first CPU from sysfs (0: not known). They decide which GEMM shapes
  // run from cache, so a profile measured on one host says what it was measured on.
  int l1d_kib = 0;
  int l2_kib = 0;
  int l3_kib = 0;

  double peak_gflops_per_core() const { return ghz * fp32_flops_per_cycle; }
  // One line stating how the peak was derived, for tables and provenance:
  // "1 core x 2.596 GHz x 32 FP32 FLOP/cycle (avx2+fma, /proc/cpuinfo) = 83.1 GFLOP/s".
  std::string peak_derivation(int cores) const;
  // One line naming the host for calibrate's and validate's output:
  // "AMD EPYC 9654 (family 25 model 17), 2 logical CPUs, avx512 (256-bit datapath), caches
  // L1d 48 KiB / L2 1024 KiB / L3 32768 KiB, 23.5 GiB".
  std::string host_line() const;
};

// Parses the text of /proc/cpuinfo (and optionally /proc/meminfo).
CpuInfo parse_cpu_info(const std::string& cpuinfo_text, const std::string& meminfo_text = "");
// Fills the cache sizes from a sysfs cache folder (/sys/devices/system/cpu/cpu0/cache):
// index*/level, index*/type ("Data", "Unified", "Instruction") and index*/size ("48K").
void read_cpu_caches(CpuInfo& info, const std::string& cache_dir);
// Reads this machine's /proc/cpuinfo, /proc/meminfo and CPU 0's caches.
CpuInfo read_cpu_info();

}  // namespace strata::kernels
