// Checks before `strata train` allocates anything: a plan the planner marked as not
// fitting memory, or whose predicted peak memory per rank times the ranks on this host
// exceeds the host's physical memory, is refused with an error that says so, instead of
// ending minutes later in std::bad_alloc or the kernel's OOM killer.
#pragma once
#include <optional>
#include <string>

#include "planner/plan.h"

namespace strata::runtime {

// MemTotal of /proc/meminfo text, in GiB; nullopt when absent or malformed.
std::optional<double> parse_meminfo_total_gib(const std::string& meminfo);
// This host's physical memory (MemTotal of /proc/meminfo); nullopt where unreadable.
std::optional<double> host_memory_gib();

// InputError when plan.prediction.fits_memory is false, or when
// (peak_memory_gib - reserve_gib) x ranks_on_host > host_gib: the predicted peak less the
// device's workspace reserve (a GPU allocator's, which the CPU runtime does not hold).
// Skipped when host_gib is unknown or the plan has no prediction. The message names the
// plan, the figures and the way out.
void check_plan_memory(const planner::Plan& plan, const std::string& plan_path, int ranks_on_host,
                       std::optional<double> host_gib, double reserve_gib = 0);

}  // namespace strata::runtime
