// The profile writer's YAML read back with the cost model's own parser
// (costmodel::parse_device_profile): same tables, same provenance, failed rows left
// out; and the profiler's busbw factors equal the cost model's (STYLE lesson 6).
#include <gtest/gtest.h>

#include <filesystem>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "costmodel/collective.h"
#include "costmodel/device_profile.h"
#include "kernels/profiler/collective_kind.h"
#include "kernels/profiler/profile_writer.h"

namespace strata::kernels::profiler {
namespace {

GemmRecord gemm(std::int64_t m, std::int64_t n, std::int64_t k, GemmDType d, double us, double eff) {
  GemmRecord r;
  r.m = m;
  r.n = n;
  r.k = k;
  r.dtype = d;
  r.time = {us, us * 0.9, us * 1.2, 5};
  r.tflops = 2.0 * m * n * k / (us * 1e-6) / 1e12;
  r.efficiency = eff;
  r.check = {100, 0, 0};
  return r;
}

CollectiveRecord coll(CollectiveKind c, int ranks, std::int64_t bytes, double us) {
  CollectiveRecord r;
  r.collective = c;
  r.ranks = ranks;
  r.bytes = bytes;
  r.count = bytes / 4;
  r.time = {us, us, us, 5};
  r.algbw_gbps = bytes / (us * 1e-6) / 1e9;
  r.busbw_gbps = r.algbw_gbps * bus_factor(c, ranks);
  r.trivial = ranks == 1;
  return r;
}

ProfileInfo info() {
  ProfileInfo i;
  i.name = "test-measured";
  i.comments = {"written by a test"};
  i.provenance = {{"tool", "strata calibrate"}, {"host", "box"}, {"device", "AMD EPYC"},
                  {"blas", "OpenBLAS 0.3.21"}, {"date", "2025-12-02T00:00:00Z"}};
  i.compute_dtype = "fp32";
  i.memory_gib = 11.5;
  i.memory_bandwidth_gbps = 21.25;
  i.peak_tflops = {{GemmDType::Fp32, 0.0831}};
  i.gemm_efficiency = 0.71;
  i.attention_efficiency = 0.2;
  i.memory_efficiency = 1.0;
  i.efficiency_provenance = {{"gemm", "median of measured"}};
  i.reserve_gib = 1;
  i.reserve_provenance = {{"kind", "estimate"}, {"ref", "slack"}};
  i.gemm_provenance = {{"shapes", "square 128..256"}};
  i.collective_provenance = {{"transport", "mpi"}};
  return i;
}

TEST(ProfileWriter, RoundTripsThroughTheCostModelParser) {
  std::vector<GemmRecord> gemms{gemm(128, 128, 128, GemmDType::Fp32, 61.5, 0.5),
                                gemm(1024, 50257, 768, GemmDType::Fp32, 1234567.8, 0.8),
                                gemm(32, 16, 32, GemmDType::Fp32, 0.75, 0.1)};
  GemmRecord bad = gemm(64, 64, 64, GemmDType::Fp32, 1.0, 0.5);
  bad.check.wrong = 3;
  bad.error = "3 wrong";
  gemms.push_back(bad);
  std::vector<CollectiveRecord> colls{coll(CollectiveKind::AllReduce, 2, 8, 3.25),
                                      coll(CollectiveKind::AllReduce, 2, 1 << 20, 250.0),
                                      coll(CollectiveKind::AllGather, 4, 4096, 12.0),
                                      coll(CollectiveKind::ReduceScatter, 2, 65536, 40.0),
                                      coll(CollectiveKind::AllToAll, 2, 1024, 9.5),
                                      coll(CollectiveKind::Broadcast, 2, 1024, 4.5),
                                      coll(CollectiveKind::SendRecv, 2, 1 << 24, 3000.0),
                                      coll(CollectiveKind::AllReduce, 1, 1024, 0.5)};
  CollectiveRecord wrong = coll(CollectiveKind::AllGather, 2, 64, 1.0);
  wrong.wrong = 1;
  colls.push_back(wrong);

  const std::string yaml = profile_to_yaml(info(), gemms, colls);
  costmodel::DeviceProfile p = costmodel::parse_device_profile(yaml, "written.yaml");
  EXPECT_EQ(p.name, "test-measured");
  EXPECT_TRUE(p.source.measured());
  EXPECT_EQ(p.source.fields.at("host"), "box");
  EXPECT_EQ(p.source.fields.at("blas"), "OpenBLAS 0.3.21");
  EXPECT_EQ(p.compute_dtype, costmodel::DType::Fp32);
  EXPECT_DOUBLE_EQ(p.memory_gib, 11.5);
  EXPECT_DOUBLE_EQ(p.memory_bandwidth_gbps, 21.25);
  EXPECT_DOUBLE_EQ(p.peak_tflops.at(costmodel::DType::Fp32), 0.0831);
  EXPECT_DOUBLE_EQ(p.gemm_efficiency, 0.71);
  EXPECT_DOUBLE_EQ(p.attention_efficiency, 0.2);
  EXPECT_DOUBLE_EQ(p.reserve_gib, 1);
  EXPECT_EQ(p.reserve_source.kind, "estimate");
  EXPECT_TRUE(p.gemm_source.measured());
  EXPECT_EQ(p.gemm_source.fields.at("shapes"), "square 128..256");
  EXPECT_EQ(p.gemm_source.fields.at("host"), "box");  // table sources carry the run's provenance
  EXPECT_EQ(p.collective_source.fields.at("transport"), "mpi");

  ASSERT_EQ(p.gemm_table.size(), 3u);  // the wrong one is left out
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(p.gemm_table[i].m, gemms[i].m);
    EXPECT_EQ(p.gemm_table[i].n, gemms[i].n);
    EXPECT_EQ(p.gemm_table[i].k, gemms[i].k);
    EXPECT_EQ(p.gemm_table[i].dtype, costmodel::DType::Fp32);
    EXPECT_NEAR(p.gemm_table[i].time_us, gemms[i].time.median_us, 1e-5 * gemms[i].time.median_us);
  }
  ASSERT_EQ(p.collective_table.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    const auto& s = p.collective_table[i];
    EXPECT_STREQ(costmodel::to_string(s.collective), to_string(colls[i].collective));
    EXPECT_EQ(s.ranks, colls[i].ranks);
    EXPECT_EQ(s.bytes, colls[i].bytes);
    EXPECT_NEAR(s.time_us, colls[i].time.median_us, 1e-5 * colls[i].time.median_us);
    EXPECT_NEAR(s.busbw_gbps, colls[i].busbw_gbps, 1e-5 * colls[i].busbw_gbps + 1e-12);
    EXPECT_EQ(s.trivial, colls[i].ranks == 1);
  }
}

TEST(ProfileWriter, WritesAtomicallyAndRefusesMissingFolder) {
  auto dir = std::filesystem::temp_directory_path() / "strata_profile_writer_test";
  std::filesystem::create_directories(dir);
  std::string path = (dir / "p.yaml").string();
  write_profile(path, info(), {gemm(128, 128, 128, GemmDType::Fp32, 101, 0.5)}, {});  // 0.5 of the 0.0831 TFLOP/s peak
  auto p = costmodel::parse_device_profile(read_file(path), path);
  EXPECT_EQ(p.gemm_table.size(), 1u);
  EXPECT_TRUE(p.collective_table.empty());
  EXPECT_THROW(write_profile((dir / "missing" / "p.yaml").string(), info(), {}, {}), InputError);
  // A row timed faster than the peak (an artefact) is left out: the reader would refuse it.
  write_profile(path, info(),
                {gemm(128, 128, 128, GemmDType::Fp32, 101, 0.5), gemm(256, 256, 256, GemmDType::Fp32, 1, 400.0)}, {});
  EXPECT_EQ(costmodel::parse_device_profile(read_file(path), path).gemm_table.size(), 1u);
  std::filesystem::remove_all(dir);
}

TEST(ProfileWriter, MedianEfficiencyUsesLargeValidRows) {
  std::vector<GemmRecord> g{gemm(8, 8, 8, GemmDType::Fp32, 1, 0.05), gemm(1024, 1024, 1024, GemmDType::Fp32, 1, 0.7),
                            gemm(2048, 2048, 2048, GemmDType::Fp32, 1, 0.9),
                            gemm(4096, 4096, 4096, GemmDType::Fp32, 1, 0.8)};
  EXPECT_DOUBLE_EQ(median_gemm_efficiency(g, GemmDType::Fp32), 0.8);
  EXPECT_DOUBLE_EQ(median_gemm_efficiency(g, GemmDType::Fp32, 1e18), (0.7 + 0.8) / 2);  // none large: all
  EXPECT_DOUBLE_EQ(median_gemm_efficiency(g, GemmDType::Bf16), 0.0);
}

// Lesson 6: the busbw factor the profiler writes with is the one the cost model reads with.
TEST(CollectiveKind, BusFactorsEqualTheCostModels) {
  const std::pair<CollectiveKind, costmodel::Collective> pairs[] = {
      {CollectiveKind::AllReduce, costmodel::Collective::AllReduce},
      {CollectiveKind::AllGather, costmodel::Collective::AllGather},
      {CollectiveKind::ReduceScatter, costmodel::Collective::ReduceScatter},
      {CollectiveKind::AllToAll, costmodel::Collective::AllToAll},
      {CollectiveKind::Broadcast, costmodel::Collective::Broadcast},
      {CollectiveKind::SendRecv, costmodel::Collective::SendRecv}};
  for (auto [k, c] : pairs) {
    EXPECT_STREQ(to_string(k), costmodel::to_string(c));
    EXPECT_EQ(collective_kind_from_string(to_string(k)), k);
    for (int n = 1; n <= 64; ++n) EXPECT_DOUBLE_EQ(bus_factor(k, n), costmodel::bus_factor(c, n)) << to_string(k) << " n=" << n;
  }
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::AllReduce, 8), 1.75);
  EXPECT_THROW(collective_kind_from_string("reduce_all"), InputError);
}

}  // namespace
}  // namespace strata::kernels::profiler
