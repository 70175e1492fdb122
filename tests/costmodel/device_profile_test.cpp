#include "costmodel/device_profile.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/errors.h"
#include "tests/input_error_of.h"
#include "test_profiles.h"

namespace sc = strata::costmodel;
using sc::DType;

namespace {

std::string error_of(const std::string& yaml) {
  return strata::testing::input_error_of([&] { sc::parse_device_profile(yaml, "test.yaml"); });
}

const char* kValid = R"(
name: dev
source: {kind: datasheet, ref: "some datasheet"}
memory_gib: 40
memory_bandwidth_gbps: 1500
peak_tflops: {bf16: 300, fp32: 20}
efficiency: {gemm: 0.7, attention: 0.4, memory: 0.8}
reserve_gib: 3
)";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

}  // namespace

TEST(DeviceProfile, YamlRoundTripKeepsEveryFieldAndTable) {
  sc::DeviceProfile p = sc::testing::toy_device();
  p.compute_dtype = DType::Fp32;
  p.efficiency_source = {"estimate", {{"ref", "defaults"}, {"gemm note", "has: a colon \"and quotes\""}}};
  p.reserve_source = {"estimate", {{"ref", "slack"}}};
  p.fp8_fast_accum_speedup = 1.15;
  p.fp8_fast_accum_source = {"published", {{"ref", "a benchmark"}}};
  p.gemm_source = {"measured", {{"tool", "strata calibrate"}, {"host", "box-1"}, {"date", "2025-12-02"}}};
  p.gemm_table = {{1024, 4096, 4096, DType::Bf16, 161.25}, {7, 13, 17, DType::Fp32, 0.1 + 0.2},
                  {1024, 4096, 4096, DType::Fp32, 1234.5}};
  p.collective_source = {"measured", {{"tool", "strata calibrate"}, {"mpi", "Open MPI 4.1.4"}}};
  sc::CollectiveSample a;
  a.collective = sc::Collective::AllReduce, a.ranks = 2, a.nodes = 1, a.bytes = 1048576;
  a.time_us = 123.456;
  a.busbw_gbps = 1048576.0 * 1.0 / (123.456e-6) / 1e9;
  sc::CollectiveSample t;
  t.collective = sc::Collective::AllGather, t.ranks = 1, t.bytes = 8, t.time_us = 0.5, t.trivial = true;
  p.collective_table = {a, t};
  p.op_source = {"measured", {{"tool", "strata calibrate"}, {"method", "runtime kernels"}}};
  p.op_table = {{"norm", 131072, 20.5, 51.25}, {"attention_core", 1.5e6, 0.1 + 0.2, 7}};
  p.block_source = {"measured", {{"tool", "strata calibrate"}}};
  p.block_table = {{"hidden 64, heads 4, kv_heads 4, ffn 256, seq 32, layernorm, gelu, learned", 1, false, 4, 300.5,
                    650.25, 0, 0},
                   {"hidden 64, heads 4, kv_heads 4, ffn 256, seq 32, layernorm, gelu, learned", 2, true, 16, 0.1 + 0.2,
                    7, 1.5, 9.75}};

  std::string y = sc::to_yaml(p);
  sc::DeviceProfile q = sc::parse_device_profile(y, "roundtrip.yaml");
  EXPECT_EQ(q.name, p.name);
  EXPECT_EQ(q.source.kind, p.source.kind);
  EXPECT_EQ(q.source.fields, p.source.fields);
  EXPECT_EQ(q.compute_dtype, p.compute_dtype);
  EXPECT_EQ(q.memory_gib, p.memory_gib);
  EXPECT_EQ(q.memory_bandwidth_gbps, p.memory_bandwidth_gbps);
  EXPECT_EQ(q.peak_tflops, p.peak_tflops);
  EXPECT_EQ(q.gemm_efficiency, p.gemm_efficiency);
  EXPECT_EQ(q.attention_efficiency, p.attention_efficiency);
  EXPECT_EQ(q.memory_efficiency, p.memory_efficiency);
  EXPECT_EQ(q.efficiency_source.fields, p.efficiency_source.fields);
  EXPECT_EQ(q.reserve_gib, p.reserve_gib);
  EXPECT_EQ(q.reserve_source.fields, p.reserve_source.fields);
  EXPECT_EQ(q.fp8_fast_accum_speedup, p.fp8_fast_accum_speedup);
  EXPECT_EQ(q.fp8_fast_accum_source.fields, p.fp8_fast_accum_source.fields);
  EXPECT_EQ(q.gemm_source.fields, p.gemm_source.fields);
  ASSERT_EQ(q.gemm_table.size(), p.gemm_table.size());
  for (std::size_t i = 0; i < p.gemm_table.size(); ++i) {
    EXPECT_EQ(q.gemm_table[i].m, p.gemm_table[i].m);
    EXPECT_EQ(q.gemm_table[i].n, p.gemm_table[i].n);
    EXPECT_EQ(q.gemm_table[i].k, p.gemm_table[i].k);
    EXPECT_EQ(q.gemm_table[i].dtype, p.gemm_table[i].dtype);
    EXPECT_EQ(q.gemm_table[i].time_us, p.gemm_table[i].time_us);  // exact: shortest repr
  }
  ASSERT_EQ(q.collective_table.size(), 2u);
  EXPECT_EQ(q.collective_table[0].collective, a.collective);
  EXPECT_EQ(q.collective_table[0].ranks, a.ranks);
  EXPECT_EQ(q.collective_table[0].bytes, a.bytes);
  EXPECT_EQ(q.collective_table[0].time_us, a.time_us);
  EXPECT_EQ(q.collective_table[0].busbw_gbps, a.busbw_gbps);
  EXPECT_TRUE(q.collective_table[1].trivial);
  EXPECT_EQ(q.collective_table[1].collective, sc::Collective::AllGather);
  EXPECT_EQ(q.op_source.fields, p.op_source.fields);
  ASSERT_EQ(q.op_table.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(q.op_table[i].op, p.op_table[i].op);
    EXPECT_EQ(q.op_table[i].work, p.op_table[i].work);
    EXPECT_EQ(q.op_table[i].fwd_us, p.op_table[i].fwd_us);
    EXPECT_EQ(q.op_table[i].bwd_us, p.op_table[i].bwd_us);
  }
  EXPECT_EQ(q.block_source.fields, p.block_source.fields);
  ASSERT_EQ(q.block_table.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(q.block_table[i].block, p.block_table[i].block);
    EXPECT_EQ(q.block_table[i].tp, p.block_table[i].tp);
    EXPECT_EQ(q.block_table[i].sequence_parallel, p.block_table[i].sequence_parallel);
    EXPECT_EQ(q.block_table[i].micro_batch, p.block_table[i].micro_batch);
    EXPECT_EQ(q.block_table[i].fwd_us, p.block_table[i].fwd_us);
    EXPECT_EQ(q.block_table[i].bwd_us, p.block_table[i].bwd_us);
    EXPECT_EQ(q.block_table[i].fwd_with_tp_us, p.block_table[i].fwd_with_tp_us);
    EXPECT_EQ(q.block_table[i].bwd_with_tp_us, p.block_table[i].bwd_with_tp_us);
  }
  // A second round trip is a fixed point.
  EXPECT_EQ(sc::to_yaml(q), y);
}

TEST(DeviceProfile, StrictParseErrorsNameTheKey) {
  EXPECT_EQ(error_of(kValid), "no error");
  const std::string op_rows = "op_table:\n  source: {kind: measured, tool: t}\n  rows:\n";
  EXPECT_EQ(error_of(std::string(kValid) + op_rows + "    - {op: norm, work: 10, fwd_us: 1, bwd_us: 2}\n"),
            "no error");
  EXPECT_NE(error_of(std::string(kValid) + op_rows + "    - {op: qkv, work: 10, fwd_us: 1, bwd_us: 2}\n")
                .find("op"), std::string::npos);
  EXPECT_NE(error_of(std::string(kValid) + op_rows + "    - {op: norm, work: 0, fwd_us: 1, bwd_us: 2}\n")
                .find("work"), std::string::npos);
  EXPECT_NE(error_of(std::string(kValid) + op_rows + "    - {op: norm, work: 10, fwd_us: 1}\n")
                .find("bwd_us"), std::string::npos);
  const std::string block_rows = "block_table:\n  source: {kind: measured, tool: t}\n  rows:\n";
  EXPECT_EQ(error_of(std::string(kValid) + block_rows +
                     "    - {block: \"b\", tp: 2, sp: true, micro_batch: 4, fwd_us: 1, bwd_us: 2, fwd_with_tp_us: 3, "
                     "bwd_with_tp_us: 4}\n"),
            "no error");
  for (const auto& [row, key] : std::vector<std::pair<std::string, std::string>>{
           {"{block: \"\", tp: 1, micro_batch: 4, fwd_us: 1, bwd_us: 2}", "block"},
           {"{block: b, tp: 0, micro_batch: 4, fwd_us: 1, bwd_us: 2}", "tp"},
           {"{block: b, tp: 1, micro_batch: 0, fwd_us: 1, bwd_us: 2}", "micro_batch"},
           {"{block: b, tp: 1, micro_batch: 4, fwd_us: -1, bwd_us: 2}", "fwd_us"},
           {"{block: b, tp: 1, micro_batch: 4, fwd_us: 1, bwd_us: 2, fwd_with_tp_us: 3, bwd_with_tp_us: 4}",
            "fwd_with_tp_us"},
           {"{block: b, tp: 2, micro_batch: 4, fwd_us: 1, bwd_us: 2, fwd_with_tp_us: 3}", "bwd_with_tp_us"},
           {"{block: b, tp: 2, micro_batch: 4, fwd_us: 1, bwd_us: 2, seconds: 3}", "seconds"}}) {
    const std::string err = error_of(std::string(kValid) + block_rows + "    - " + row + "\n");
    EXPECT_NE(err.find(key), std::string::npos) << row << " -> " << err;
  }
  std::string e = error_of(std::string(kValid) + "memroy_gib: 3\n");
  EXPECT_NE(e.find("memroy_gib"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key"), std::string::npos) << e;
  e = error_of(replace(kValid, "memory_bandwidth_gbps: 1500", "memory_bandwidth_gbps: -5"));
  EXPECT_NE(e.find("memory_bandwidth_gbps"), std::string::npos) << e;
  EXPECT_NE(e.find("-5"), std::string::npos) << e;
  e = error_of(replace(kValid, "peak_tflops: {bf16: 300, fp32: 20}", ""));
  EXPECT_NE(e.find("peak_tflops"), std::string::npos) << e;
  EXPECT_NE(e.find("missing"), std::string::npos) << e;
  e = error_of(replace(kValid, "peak_tflops: {bf16: 300, fp32: 20}", "peak_tflops: {bf61: 300}"));
  EXPECT_NE(e.find("bf61"), std::string::npos) << e;
  e = error_of(replace(kValid, "gemm: 0.7", "gemm: 1.7"));
  EXPECT_NE(e.find("efficiency.gemm"), std::string::npos) << e;
  e = error_of(replace(kValid, "kind: datasheet", "kind: guess"));
  EXPECT_NE(e.find("source.kind"), std::string::npos) << e;
  e = error_of(replace(kValid, "{kind: datasheet, ref: \"some datasheet\"}", "{kind: datasheet}"));
  EXPECT_NE(e.find("source"), std::string::npos) << e;
  e = error_of(std::string(kValid) + "compute_dtype: fp16\n");
  EXPECT_NE(e.find("compute_dtype"), std::string::npos) << e;
  // Error carries file and line.
  e = error_of(std::string(kValid) + "bogus: 1\n");
  EXPECT_NE(e.find("test.yaml:9"), std::string::npos) << e;
  // Table rows: unknown row key, bad dtype, inconsistent busbw.
  e = error_of(std::string(kValid) +
               "gemm_table:\n  source: {kind: measured, tool: t}\n  rows:\n"
               "    - {m: 1, n: 2, k: 3, dtype: bf16, time_us: 1, flops: 2}\n");
  EXPECT_NE(e.find("gemm_table.rows[0]"), std::string::npos) << e;
  EXPECT_NE(e.find("flops"), std::string::npos) << e;
  e = error_of(std::string(kValid) +
               "gemm_table:\n  source: {kind: measured, tool: t}\n  rows:\n"
               "    - {m: 0, n: 2, k: 3, dtype: bf16, time_us: 1}\n");
  EXPECT_NE(e.find("rows[0].m"), std::string::npos) << e;
  e = error_of(std::string(kValid) +
               "collective_table:\n  source: {kind: measured, tool: t}\n  rows:\n"
               "    - {collective: all_reduce, ranks: 2, bytes: 1000000, time_us: 100, busbw_gbps: 99}\n");
  EXPECT_NE(e.find("busbw_gbps"), std::string::npos) << e;
  e = error_of(std::string(kValid) +
               "collective_table:\n  source: {kind: measured, tool: t}\n  rows:\n"
               "    - {collective: all_reduce, ranks: 1, bytes: 8, time_us: 1, trivial: false}\n");
  EXPECT_NE(e.find("trivial"), std::string::npos) << e;
}

TEST(DeviceProfile, BusbwGivenInTheTableMustAgreeWithBusFactor) {
  // 1e6 B in 100 us over 2 ranks all-reduce: algbw 10 GB/s, busbw = 10 * 2*1/2 = 10 GB/s.
  std::string y = std::string(kValid) +
                  "collective_table:\n  source: {kind: measured, tool: t}\n  rows:\n"
                  "    - {collective: all_reduce, ranks: 2, bytes: 1000000, time_us: 100, busbw_gbps: 10}\n"
                  "    - {collective: all_gather, ranks: 4, bytes: 1000000, time_us: 100}\n";
  auto p = sc::parse_device_profile(y, "t.yaml");
  EXPECT_DOUBLE_EQ(p.collective_table[0].busbw_gbps, 10);
  EXPECT_DOUBLE_EQ(p.collective_table[1].busbw_gbps, 10 * 0.75);
}

TEST(DeviceProfile, CatalogProfilesLoadAndSayWhereNumbersComeFrom) {
  auto names = sc::device_catalog_names();
  for (const char* want : {"a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb", "cpu-host"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (const auto& n : names) {
    auto p = sc::load_device_profile(n);
    EXPECT_EQ(p.name, n);
    EXPECT_FALSE(p.source.kind.empty()) << n;
    EXPECT_FALSE(p.efficiency_source.kind.empty()) << n << ": efficiencies need a source";
    EXPECT_FALSE(p.reserve_source.kind.empty()) << n << ": reserve needs a source";
    EXPECT_GT(p.peak_flops(p.compute_dtype), 0) << n;
    // Round trip of the shipped files too.
    EXPECT_EQ(sc::to_yaml(sc::parse_device_profile(sc::to_yaml(p), "x")), sc::to_yaml(p));
  }
  auto h100 = sc::load_device_profile("h100-sxm-80gb");
  EXPECT_DOUBLE_EQ(h100.peak_flops(DType::Bf16), 989.4e12);
  EXPECT_DOUBLE_EQ(h100.memory_bandwidth_gbps, 3350);
  EXPECT_EQ(sc::load_device_profile("cpu-host").source.kind, "estimate");
}

TEST(DeviceProfile, UnknownNamesSuggestCloseOnesAndPathsLoad) {
  try {
    sc::load_device_profile("h100");
    FAIL();
  } catch (const strata::InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("unknown device 'h100'"), std::string::npos) << m;
    EXPECT_NE(m.find("did you mean"), std::string::npos) << m;
    EXPECT_NE(m.find("h100-sxm-80gb"), std::string::npos) << m;
  }
  EXPECT_THROW(sc::load_device_profile("/nonexistent/dev.yaml"), strata::InputError);
  auto dir = std::filesystem::temp_directory_path() / "strata_costmodel_dp_test";
  std::filesystem::create_directories(dir);
  auto path = (dir / "my-dev.yaml").string();
  std::ofstream(path) << kValid;
  auto p = sc::load_device_profile(path);
  EXPECT_EQ(p.name, "dev");
  EXPECT_DOUBLE_EQ(p.peak_flops(DType::Bf16), 300e12);
  EXPECT_THROW(p.peak_flops(DType::Tf32), strata::InputError);
  std::filesystem::remove_all(dir);
}

// Numbers no device has are refused as typos (issue 16): GEMM rows faster than the
// dtype's peak, one shape twice, a reserve that leaves no memory, absurd bandwidths.
struct ImplausibleCase {
  const char* name;
  std::string extra;      // appended to kValid (after `from` -> `to`)
  std::string from, to;
  const char* mentions;   // "" = accepted
};

class ImplausibleProfile : public ::testing::TestWithParam<ImplausibleCase> {};

TEST_P(ImplausibleProfile, RefusedByName) {
  const ImplausibleCase& c = GetParam();
  std::string yaml = std::string(kValid) + c.extra;
  if (!c.from.empty()) yaml = replace(yaml, c.from, c.to);
  const std::string e = error_of(yaml);
  if (std::string(c.mentions).empty()) EXPECT_EQ(e, "no error");
  else EXPECT_NE(e.find(c.mentions), std::string::npos) << e;
}

const std::string kRows = "gemm_table:\n  source: {kind: measured, tool: t, host: h}\n  rows:\n";

INSTANTIATE_TEST_SUITE_P(
    DeviceProfile, ImplausibleProfile,
    ::testing::ValuesIn(std::vector<ImplausibleCase>{
        // 2*4096^3 flops in 500 us = 275 TFLOP/s: under the 300 bf16 peak.
        {"gemm_under_peak", kRows + "    - {m: 4096, n: 4096, k: 4096, dtype: bf16, time_us: 500}\n", "", "", ""},
        {"gemm_at_peak_within_slack", kRows + "    - {m: 4096, n: 4096, k: 4096, dtype: bf16, time_us: 440}\n", "", "", ""},
        {"gemm_faster_than_peak", kRows + "    - {m: 4096, n: 4096, k: 4096, dtype: bf16, time_us: 100}\n", "", "",
         "above the device's peak of 300 TFLOP/s"},
        {"gemm_fp32_faster_than_fp32_peak", kRows + "    - {m: 4096, n: 4096, k: 4096, dtype: fp32, time_us: 1000}\n",
         "", "", "above the device's peak of 20 TFLOP/s"},
        {"gemm_dtype_without_peak_unchecked", kRows + "    - {m: 4096, n: 4096, k: 4096, dtype: tf32, time_us: 1}\n",
         "", "", ""},
        {"duplicate_gemm_shape",
         kRows + "    - {m: 64, n: 64, k: 64, dtype: bf16, time_us: 10}\n    - {m: 64, n: 64, k: 64, dtype: bf16, time_us: 12}\n",
         "", "", "duplicate GEMM shape 64x64x64 bf16"},
        {"same_shape_other_dtype",
         kRows + "    - {m: 64, n: 64, k: 64, dtype: bf16, time_us: 10}\n    - {m: 64, n: 64, k: 64, dtype: fp32, time_us: 12}\n",
         "", "", ""},
        {"reserve_equals_memory", "", "reserve_gib: 3", "reserve_gib: 40", "reserve_gib: 40 must be below memory_gib (40)"},
        {"reserve_above_memory", "", "reserve_gib: 3", "reserve_gib: 100", "must be below memory_gib"},
        {"memory_bandwidth_absurd", "", "memory_bandwidth_gbps: 1500", "memory_bandwidth_gbps: 2e6",
         "memory_bandwidth_gbps: 2000000 GB/s is beyond any device"},
        {"collective_busbw_absurd",
         "collective_table:\n  source: {kind: measured, tool: t, host: h}\n  rows:\n"
         "    - {collective: all_reduce, ranks: 2, bytes: 1099511627776, time_us: 1}\n",
         "", "", "beyond any interconnect"},
        {"duplicate_top_level_key", "memory_gib: 41\n", "", "", "duplicate key 'memory_gib'"},
        {"fp8_fast_accum_with_source",
         "fp8_fast_accum_speedup: 1.15\nfp8_fast_accum_source: {kind: published, ref: r}\n", "", "", ""},
        {"fp8_fast_accum_slower", "fp8_fast_accum_speedup: 0.9\nfp8_fast_accum_source: {kind: published, ref: r}\n",
         "", "", "fp8_fast_accum_speedup: 0.9 must be in [1, 2]"},
        {"fp8_fast_accum_without_source", "fp8_fast_accum_speedup: 1.15\n", "", "", "fp8_fast_accum_source"},
    }),
    [](const auto& info) { return std::string(info.param.name); });
