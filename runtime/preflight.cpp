#include "runtime/preflight.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/errors.h"

namespace strata::runtime {

std::optional<double> parse_meminfo_total_gib(const std::string& meminfo) {
  std::istringstream in(meminfo);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemTotal:", 0) != 0) continue;
    std::istringstream fields(line.substr(9));
    double kib = 0;
    std::string unit;
    if (!(fields >> kib) || !std::isfinite(kib) || kib <= 0) return std::nullopt;
    fields >> unit;
    if (!unit.empty() && unit != "kB") return std::nullopt;
    return kib / (1024.0 * 1024.0);
  }
  return std::nullopt;
}

std::optional<double> host_memory_gib() {
  std::ifstream f("/proc/meminfo");
  if (!f) return std::nullopt;
  std::ostringstream ss;
  ss << f.rdbuf();
  return parse_meminfo_total_gib(ss.str());
}

void check_plan_memory(const planner::Plan& plan, const std::string& plan_path, int ranks_on_host,
                       std::optional<double> host_gib, double reserve_gib) {
  const auto& p = plan.prediction;
  if (!p.fits_memory)
    input_error("--plan {}: the plan does not fit memory (fits_memory: false, predicted peak {:.1f} "
                "GiB per rank on cluster {}); pick a plan that fits (`strata plan` lists only "
                "those) or re-plan with more memory per rank",
                plan_path, p.peak_memory_gib, plan.cluster);
  if (!host_gib || !(p.peak_memory_gib > 0) || ranks_on_host < 1) return;
  const double per_rank = std::max(0.0, p.peak_memory_gib - std::max(0.0, reserve_gib));
  const double need = per_rank * ranks_on_host;
  if (need > *host_gib)
    input_error("--plan {}: predicted peak memory {:.1f} GiB per rank{} x {} rank{} on this host = "
                "{:.1f} GiB exceeds the host's {:.1f} GiB of physical memory (/proc/meminfo "
                "MemTotal); train a smaller model or spread the ranks over more hosts",
                plan_path, per_rank,
                reserve_gib > 0 ? fmt::format(" (without the device's {:.1f} GiB workspace reserve)", reserve_gib) : "",
                ranks_on_host, ranks_on_host == 1 ? "" : "s", need, *host_gib);
}

}  // namespace strata::runtime
