// CpuInfo: FLOP/cycle from the SIMD flags and the peak derivation, on recorded
// /proc/cpuinfo excerpts (not this machine's).
#include <gtest/gtest.h>

#include "kernels/cpu/cpu_info.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace strata::kernels {
namespace {

std::string cpuinfo(const std::string& vendor, int family, const std::string& name, const std::string& mhz,
                    const std::string& flags, int processors = 2) {
  std::string s;
  for (int p = 0; p < processors; ++p)
    s += "processor\t: " + std::to_string(p) + "\nvendor_id\t: " + vendor + "\ncpu family\t: " +
         std::to_string(family) + "\nmodel\t\t: 17\nmodel name\t: " + name + "\ncpu MHz\t\t: " + mhz +
         "\nflags\t\t: " + flags + "\n\n";
  return s;
}

TEST(CpuInfo, Avx2FmaGives32FlopPerCycle) {
  auto c = parse_cpu_info(cpuinfo("GenuineIntel", 6, "Intel(R) Core(TM) i7-8700", "3200.000", "fpu sse avx avx2 fma"));
  EXPECT_EQ(c.fp32_flops_per_cycle, 32);
  EXPECT_EQ(c.simd, "avx2+fma");
  EXPECT_DOUBLE_EQ(c.ghz, 3.2);
  EXPECT_NEAR(c.peak_gflops_per_core(), 102.4, 1e-9);
  EXPECT_EQ(c.logical_cpus, 2);
  EXPECT_EQ(c.model_name, "Intel(R) Core(TM) i7-8700");
}

TEST(CpuInfo, IntelAvx512Gives64) {
  auto c = parse_cpu_info(cpuinfo("GenuineIntel", 6, "Intel(R) Xeon(R) Platinum 8380", "2300.000",
                                  "avx avx2 fma avx512f avx512dq"));
  EXPECT_EQ(c.fp32_flops_per_cycle, 64);
}

TEST(CpuInfo, Zen4Avx512HasAvx2Throughput) {
  auto c = parse_cpu_info(cpuinfo("AuthenticAMD", 25, "AMD EPYC", "2596.122", "avx avx2 fma avx512f avx512_bf16"));
  EXPECT_EQ(c.fp32_flops_per_cycle, 32);
  EXPECT_NE(c.simd.find("256-bit"), std::string::npos);
  auto z5 = parse_cpu_info(cpuinfo("AuthenticAMD", 26, "AMD EPYC 9005", "2400.000", "avx2 fma avx512f"));
  EXPECT_EQ(z5.fp32_flops_per_cycle, 64);
}

TEST(CpuInfo, OlderSimdLevels) {
  EXPECT_EQ(parse_cpu_info(cpuinfo("GenuineIntel", 6, "x", "2000", "sse avx")).fp32_flops_per_cycle, 16);
  EXPECT_EQ(parse_cpu_info(cpuinfo("GenuineIntel", 6, "x", "2000", "sse sse2")).fp32_flops_per_cycle, 8);
}

TEST(CpuInfo, DerivationStatesTheProduct) {
  auto c = parse_cpu_info(cpuinfo("AuthenticAMD", 25, "AMD EPYC", "2500.000", "avx2 fma"),
                          "MemTotal:       24683568 kB\nMemFree: 1 kB\n");
  EXPECT_EQ(c.peak_derivation(2), "2 cores x 2.500 GHz x 32 FP32 FLOP/cycle (avx2+fma, /proc/cpuinfo) = 160.0 GFLOP/s");
  EXPECT_NEAR(c.memory_gib, 24683568.0 / 1048576.0, 1e-9);
}

// A recorded sysfs cache folder: the instruction cache is not a data cache, sizes come in
// K or M, and the host line names every level it found.
TEST(CpuInfo, ReadsDataCachesFromSysfs) {
  const auto dir = std::filesystem::temp_directory_path() / ("strata-cache-" + std::to_string(::getpid()));
  auto put = [&](const std::string& index, const std::string& level, const std::string& type,
                 const std::string& size) {
    std::filesystem::create_directories(dir / index);
    std::ofstream(dir / index / "level") << level << "\n";
    std::ofstream(dir / index / "type") << type << "\n";
    std::ofstream(dir / index / "size") << size << "\n";
  };
  put("index0", "1", "Data", "48K");
  put("index1", "1", "Instruction", "32K");
  put("index2", "2", "Unified", "1024K");
  put("index3", "3", "Unified", "32M");
  CpuInfo c = parse_cpu_info(cpuinfo("AuthenticAMD", 25, "AMD EPYC 9654", "2596.000", "avx2 fma"));
  read_cpu_caches(c, dir.string());
  std::filesystem::remove_all(dir);
  EXPECT_EQ(c.l1d_kib, 48);
  EXPECT_EQ(c.l2_kib, 1024);
  EXPECT_EQ(c.l3_kib, 32768);
  EXPECT_EQ(c.host_line(),
            "AMD EPYC 9654 (family 25 model 17), 2 logical CPUs, avx2+fma, caches L1d 48 KiB / L2 1024 KiB / "
            "L3 32768 KiB");
}

TEST(CpuInfo, MissingCacheFolderLeavesCachesUnknown) {
  CpuInfo c = parse_cpu_info(cpuinfo("GenuineIntel", 6, "Xeon", "2000.000", "avx2 fma", 1));
  read_cpu_caches(c, "/nonexistent/strata/cache");
  EXPECT_EQ(c.l2_kib, 0);
  EXPECT_EQ(c.host_line(), "Xeon (family 6 model 17), 1 logical CPU, avx2+fma");
}

TEST(CpuInfo, ReadsThisMachine) {
  auto c = read_cpu_info();
  EXPECT_GE(c.logical_cpus, 1);
  EXPECT_GE(c.fp32_flops_per_cycle, 8);
}

}  // namespace
}  // namespace strata::kernels
