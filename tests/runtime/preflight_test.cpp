// The memory pre-flight of `strata train`: plans marked as not fitting, and plans whose
// predicted peak (less the device's workspace reserve) times the ranks on the host
// exceeds the host's physical memory, are refused by name; /proc/meminfo text is read.
#include "runtime/preflight.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "common/errors.h"

namespace strata::runtime {
namespace {

struct MemoryCase {
  const char* name;
  bool fits_memory;
  double peak_gib;
  int ranks;
  std::optional<double> host_gib;
  double reserve_gib;
  const char* mentions;  // "" = accepted
};

void PrintTo(const MemoryCase& c, std::ostream* os) { *os << c.name; }

class PreflightMemory : public ::testing::TestWithParam<MemoryCase> {};

TEST_P(PreflightMemory, RefusesWhatCannotFit) {
  const MemoryCase& c = GetParam();
  planner::Plan plan;
  plan.cluster = "dgx-a100";
  plan.prediction.fits_memory = c.fits_memory;
  plan.prediction.peak_memory_gib = c.peak_gib;
  std::string error;
  try {
    check_plan_memory(plan, "p.yaml", c.ranks, c.host_gib, c.reserve_gib);
  } catch (const InputError& e) {
    error = e.what();
  }
  if (std::string(c.mentions).empty()) {
    EXPECT_EQ(error, "");
  } else {
    EXPECT_NE(error.find(c.mentions), std::string::npos) << error;
    EXPECT_NE(error.find("--plan p.yaml"), std::string::npos) << error;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Runtime, PreflightMemory,
    ::testing::ValuesIn(std::vector<MemoryCase>{
        {"small_plan", true, 4.0, 4, 23.5, 4.0, ""},
        {"reserve_only_many_ranks", true, 4.0, 64, 23.5, 4.0, ""},
        {"fits_memory_false", false, 212.0, 1, 1000.0, 0, "fits_memory: false"},
        {"fits_memory_false_unknown_host", false, 212.0, 1, std::nullopt, 0, "does not fit memory"},
        {"over_host_memory", true, 212.0, 1, 23.5, 4.0, "exceeds the host's 23.5 GiB"},
        {"over_host_with_ranks", true, 10.0, 4, 23.5, 0, "x 4 ranks on this host = 40.0 GiB"},
        {"exactly_host", true, 10.0, 2, 20.0, 0, ""},
        {"host_unknown", true, 212.0, 8, std::nullopt, 0, ""},
        {"no_prediction", true, 0.0, 8, 1.0, 0, ""},
    }),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Preflight, ReadsMemTotal) {
  EXPECT_NEAR(*parse_meminfo_total_gib("MemTotal:       24683664 kB\nMemFree: 1 kB\n"), 23.54, 0.01);
  EXPECT_FALSE(parse_meminfo_total_gib("MemFree: 1 kB\n"));
  EXPECT_FALSE(parse_meminfo_total_gib("MemTotal: lots\n"));
  EXPECT_FALSE(parse_meminfo_total_gib("MemTotal: 5 MB\n"));
  EXPECT_FALSE(parse_meminfo_total_gib("MemTotal: -5 kB\n"));
  const auto host = host_memory_gib();
  if (host) { EXPECT_GT(*host, 0.1); }
}

}  // namespace
}  // namespace strata::runtime
