// nccl-tests-style output: every non-data line starts with '#', a header and a units
// row, one data row per record, footer summaries; JSON carries the same records.
#include <gtest/gtest.h>

#include "kernels/profiler/sweep_report.h"
#include "common/json_text.h"
#include "tests/text_lines.h"

namespace strata::kernels::profiler {
namespace {

RunContext ctx() {
  RunContext c;
  c.strata_version = "0.1.0";
  c.commit = "abc1234";
  c.backend = "cpu";
  c.transport = "mpi";
  c.device = "AMD EPYC";
  c.host = "box";
  c.libraries = "OpenBLAS; Open MPI";
  c.date = "2025-12-02T00:00:00Z";
  c.ranks = 2;
  c.peak = "1 core x 2.6 GHz x 32";
  return c;
}

using strata::testing::lines_of;

TEST(SweepReport, GemmTableHasPreambleHeaderUnitsRowsAndFooter) {
  GemmRecord ok;
  ok.m = 128;
  ok.n = 256;
  ok.k = 64;
  ok.time = {10, 9, 12, 5};
  ok.tflops = 0.4;
  ok.efficiency = 0.5;
  GemmRecord bad = ok;
  bad.check.wrong = 2;
  bad.error = "2 wrong";
  bad.time = {};
  auto ls = lines_of(format_gemm_table(ctx(), {ok, bad}));
  int data = 0;
  bool header = false, units = false;
  for (const auto& l : ls) {
    if (l[0] == '#') {
      header |= l.find("TFLOP/s") != std::string::npos && l.find("#wrong") != std::string::npos;
      units |= l.find("(us)") != std::string::npos && l.find("(%)") != std::string::npos;
      continue;
    }
    ++data;
  }
  EXPECT_EQ(data, 2);
  EXPECT_TRUE(header);
  EXPECT_TRUE(units);
  std::string all = format_gemm_table(ctx(), {ok, bad});
  EXPECT_NE(all.find("commit abc1234"), std::string::npos);
  EXPECT_NE(all.find("statistic: median"), std::string::npos);
  EXPECT_NE(all.find("50.0"), std::string::npos);  // eff%
  EXPECT_NE(all.find("1 shapes measured, 1 failed validation"), std::string::npos);
}

TEST(SweepReport, CollectiveTableStatesFactorsAndAverages) {
  CollectiveRecord r;
  r.collective = CollectiveKind::AllReduce;
  r.ranks = 2;
  r.bytes = 1024;
  r.count = 256;
  r.time = {2, 2, 2, 5};
  r.algbw_gbps = 0.512;
  r.busbw_gbps = 0.512;
  CollectiveRecord t = r;
  t.ranks = 1;
  t.trivial = true;
  std::string s = format_collective_table(ctx(), {r, t});
  int data = 0;
  for (const auto& l : lines_of(s))
    if (l[0] != '#') ++data;
  EXPECT_EQ(data, 2);
  EXPECT_NE(s.find("2(n-1)/n"), std::string::npos);
  EXPECT_NE(s.find("Avg bus bandwidth    : 0.512 GB/s  (all_reduce, 2 ranks, 1 KiB .. 1 KiB)"), std::string::npos);
  EXPECT_NE(s.find("Out of bounds values : 0 OK"), std::string::npos);
  EXPECT_NE(s.find("trivial"), std::string::npos);
}

TEST(SweepReport, JsonHasSchemaContextAndRecords) {
  GemmRecord g;
  g.m = g.n = g.k = 8;
  g.time = {1, 1, 1, 3};
  CollectiveRecord c;
  c.bytes = 8;
  c.time = {1, 1, 1, 3};
  auto j = sweep_json(ctx(), {g}, {c}, std::nullopt);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["context"]["backend"], "cpu");
  EXPECT_EQ(j["context"]["gemm_timing"]["statistic"], "median");
  ASSERT_EQ(j["gemm"].size(), 1u);
  EXPECT_TRUE(j["gemm"][0].contains("p10_us"));
  EXPECT_EQ(j["collectives"][0]["collective"], "all_reduce");
  EXPECT_FALSE(j.contains("memory_bandwidth"));
  auto parsed = strata::parse_json(j.dump());
  EXPECT_EQ(parsed, j);
}

TEST(SweepReport, HumanBytes) {
  EXPECT_EQ(human_bytes(8), "8 B");
  EXPECT_EQ(human_bytes(1024), "1 KiB");
  EXPECT_EQ(human_bytes(64 << 20), "64 MiB");
  EXPECT_EQ(human_bytes(std::int64_t{1} << 30), "1 GiB");
  EXPECT_EQ(human_bytes(1000), "1000 B");
}

}  // namespace
}  // namespace strata::kernels::profiler
