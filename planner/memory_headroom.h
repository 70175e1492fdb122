// Memory headroom: GPU memory a plan must leave free beyond the device's workspace reserve
// (allocator fragmentation, NCCL buffers, a longer sequence later). A winner at 79.9 of
// 80 GiB fits on paper and fails in practice; `strata plan --memory-headroom 5%` keeps
// only plans that leave 4 GiB of an 80 GiB device free. The planner sees a device with
// that much less memory; the reports still show the device's capacity.
#pragma once
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "common/errors.h"
#include "costmodel/cluster_spec.h"

namespace strata::planner {

// `strata plan`'s default headroom: a plan keeps this share of each device's memory free
// beyond the workspace reserve, the share the tables mark "tight" when a plan uses it
// (report/format_table.cpp). An estimate of long jobs' allocator fragmentation and
// communicator buffers, not a measurement: --memory-headroom 0 plans up to the reserve.
inline constexpr double kDefaultHeadroomShare = 0.05;
inline constexpr const char* kDefaultMemoryHeadroom = "5%";

// "5%" (of `device_memory_gib`), "4GiB", "4 GiB" or "4" (GiB) -> GiB. InputError naming
// --memory-headroom for anything else, a negative amount, or 100% and more.
inline double parse_memory_headroom_gib(const std::string& text, double device_memory_gib) {
  const auto bad = [&](const char* why) -> double {
    input_error("--memory-headroom: expected a share of the device memory (5%) or GiB (4, 4GiB), got '{}'{}", text,
                why);
  };
  std::string number = text;
  bool percent = false;
  while (!number.empty() && number.back() == ' ') number.pop_back();
  if (number.ends_with('%')) {
    percent = true;
    number.pop_back();
  } else if (number.ends_with("GiB")) {
    number.resize(number.size() - 3);
  }
  while (!number.empty() && number.back() == ' ') number.pop_back();
  if (number.empty() || number.front() == ' ') return bad("");
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  if (errno != 0 || end != number.c_str() + number.size() || !std::isfinite(v)) return bad("");
  if (v < 0) return bad(" (negative)");
  if (percent && v >= 100) return bad(" (100% or more leaves nothing to plan with)");
  return percent ? device_memory_gib * v / 100 : v;
}

// `cluster` with `headroom_gib` less memory per device. InputError when the rest would not
// reach above the workspace reserve.
inline costmodel::ClusterSpec with_memory_headroom(costmodel::ClusterSpec cluster, double headroom_gib) {
  auto& d = cluster.device;
  if (d.memory_gib - headroom_gib <= d.reserve_gib)
    input_error("--memory-headroom: {:g} GiB of headroom leaves {} ({:g} GiB) no memory above its {:g} GiB "
                "workspace reserve",
                headroom_gib, d.name, d.memory_gib, d.reserve_gib);
  d.memory_gib -= headroom_gib;
  return cluster;
}

}  // namespace strata::planner
