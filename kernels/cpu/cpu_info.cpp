#include "kernels/cpu/cpu_info.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace strata::kernels {

namespace {

std::string trim(std::string s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string slurp(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string CpuInfo::peak_derivation(int cores) const {
  return fmt::format("{} core{} x {:.3f} GHz x {} FP32 FLOP/cycle ({}, /proc/cpuinfo) = {:.1f} GFLOP/s",
                     cores, cores == 1 ? "" : "s", ghz, fp32_flops_per_cycle, simd,
                     cores * peak_gflops_per_core());
}

CpuInfo parse_cpu_info(const std::string& cpuinfo_text, const std::string& meminfo_text) {
  CpuInfo info;
  std::set<std::string> flags;
  bool first_flags = true;
  std::istringstream in(cpuinfo_text);
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(line.substr(0, colon));
    std::string value = trim(line.substr(colon + 1));
    if (key == "processor") {
      ++info.logical_cpus;
    } else if (key == "model name" && info.model_name.empty()) {
      info.model_name = value;
    } else if (key == "vendor_id" && info.vendor.empty()) {
      info.vendor = value;
    } else if (key == "cpu family" && info.family == 0) {
      info.family = std::atoi(value.c_str());
    } else if (key == "model" && info.model == 0) {
      info.model = std::atoi(value.c_str());
    } else if (key == "cpu MHz" && info.ghz == 0) {
      info.ghz = std::atof(value.c_str()) / 1000.0;
    } else if (key == "flags" && first_flags) {
      first_flags = false;
      std::istringstream fs(value);
      std::string f;
      while (fs >> f) flags.insert(f);
    }
  }
  const bool amd = info.vendor == "AuthenticAMD";
  if (flags.count("avx512f")) {
    if (amd && info.family <= 25) {
      info.simd = "avx512 (256-bit datapath)";
      info.fp32_flops_per_cycle = 32;
    } else {
      info.simd = "avx512";
      info.fp32_flops_per_cycle = 64;
    }
  } else if (flags.count("avx2") && flags.count("fma")) {
    info.simd = "avx2+fma";
    info.fp32_flops_per_cycle = 32;
  } else if (flags.count("avx")) {
    info.simd = "avx";
    info.fp32_flops_per_cycle = 16;
  } else {
    info.simd = "sse";
    info.fp32_flops_per_cycle = 8;
  }
  std::istringstream mi(meminfo_text);
  while (std::getline(mi, line)) {
    if (line.rfind("MemTotal:", 0) == 0) {
      double kib = std::atof(line.substr(9).c_str());
      info.memory_gib = kib / (1024.0 * 1024.0);
      break;
    }
  }
  if (info.model_name.empty()) info.model_name = "unknown CPU";
  return info;
}

std::string CpuInfo::host_line() const {
  std::string s = fmt::format("{} (family {} model {}), {} logical CPU{}, {}", model_name, family, model,
                              logical_cpus, logical_cpus == 1 ? "" : "s", simd);
  if (l1d_kib > 0 || l2_kib > 0 || l3_kib > 0)
    s += fmt::format(", caches L1d {} KiB / L2 {} KiB / L3 {} KiB", l1d_kib, l2_kib, l3_kib);
  if (memory_gib > 0) s += fmt::format(", {:.1f} GiB", memory_gib);
  return s;
}

void read_cpu_caches(CpuInfo& info, const std::string& cache_dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(cache_dir, ec)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    const std::string dir = entry.path().string();
    const std::string type = trim(slurp((dir + "/type").c_str()));
    if (type != "Data" && type != "Unified") continue;
    const int level = std::atoi(slurp((dir + "/level").c_str()).c_str());
    const std::string size = trim(slurp((dir + "/size").c_str()));
    int kib = std::atoi(size.c_str());
    if (!size.empty() && size.back() == 'M') kib *= 1024;
    if (kib <= 0) continue;
    if (level == 1) info.l1d_kib = kib;
    else if (level == 2) info.l2_kib = kib;
    else if (level == 3) info.l3_kib = kib;
  }
}

CpuInfo read_cpu_info() {
  CpuInfo info = parse_cpu_info(slurp("/proc/cpuinfo"), slurp("/proc/meminfo"));
  read_cpu_caches(info, "/sys/devices/system/cpu/cpu0/cache");
  return info;
}

}  // namespace strata::kernels
