// `strata calibrate` as a user runs it: bad input gives one `error:` line and exit 2
// before anything is measured; a tiny quick run writes a profile the cost model reads.
#include <set>
#include <tuple>

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "common/atomic_file.h"
#include "costmodel/block_table.h"
#include "costmodel/device_profile.h"
#include "models/catalog.h"
#include <chrono>

#include "tests/integration/cli_run.h"

namespace {

struct Result {
  int code = -1;
  std::string out, err;
};

Result run(const std::string& args) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("strata_calibrate_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string out = (dir / "stdout").string(), err = (dir / "stderr").string();
  // calibrate starts MPI: in sanitizer builds, Open MPI's own allocations are suppressed
  // (leak checking of strata's code stays on).
  std::string cmd = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1";
  for (const std::string& kv : strata::testing::mpi_child_env())
    cmd += " " + kv.substr(0, kv.find('=') + 1) + "'" + kv.substr(kv.find('=') + 1) + "'";
  cmd += " " + std::string(STRATA_EXE) + " calibrate " + args + " >" + out + " 2>" + err;
  int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = strata::read_file(out);
  r.err = strata::read_file(err);
  return r;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("strata_cal_" + std::to_string(::getpid()) + "_" + name)).string();
}

TEST(CalibrateCli, UnknownBackendExits2) {
  Result r = run("--backend tpu --out " + temp_path("a.yaml"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: unknown backend 'tpu' (expected cpu or cuda)\n");
  EXPECT_FALSE(std::filesystem::exists(temp_path("a.yaml")));
}

TEST(CalibrateCli, UnwritableOutputExits2BeforeMeasuring) {
  Result r = run("--backend cpu --out /nonexistent-folder/p.yaml");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");  // nothing measured, nothing printed
  Result d = run("--backend cpu --out " + std::filesystem::temp_directory_path().string());
  EXPECT_EQ(d.code, 2) << d.err;
}

TEST(CalibrateCli, CudaWithoutBackendOrDeviceExits2) {
  Result r = run("--backend cuda --out " + temp_path("c.yaml"));
  if (r.code == 0) GTEST_SKIP() << "a CUDA device is visible: cuda calibration ran";
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: --backend cuda: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(CalibrateCli, OtherBadFlagsExit2) {
  const std::string out = " --out " + temp_path("d.yaml");
  for (const std::string& args :
       {"--model no-such-model" + out, "--max-bytes 3" + out, "--max-bytes 12Q" + out, "--format xml" + out,
        "--tp-degrees 0" + out, "--dtypes bf16" + out, "--micro-batch 0" + out, std::string("--backend cpu")}) {
    Result r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << args << "\n" << r.err;
  }
}

TEST(CalibrateCli, QuickRunWritesAProfileTheCostModelReads) {
  const std::string path = temp_path("quick.yaml");
  Result r = run("--backend cpu --quick --model tiny --tp-degrees 1,2 --max-gemm-dim 128 --max-bytes 1K --out " + path);
  ASSERT_EQ(r.code, 0) << r.err;
  auto p = strata::costmodel::parse_device_profile(strata::read_file(path), path);
  EXPECT_EQ(p.name, "strata_cal_" + std::to_string(::getpid()) + "_quick");
  EXPECT_TRUE(p.source.measured());
  EXPECT_EQ(p.source.fields.at("tool"), "strata calibrate");
  EXPECT_GT(p.gemm_table.size(), 10u);
  EXPECT_FALSE(p.collective_table.empty());
  EXPECT_GT(p.peak_tflops.at(strata::costmodel::DType::Fp32), 0);
  EXPECT_NE(r.out.find("#wrong"), std::string::npos);
  EXPECT_NE(r.out.find("busbw"), std::string::npos);
  // The runtime's non-GEMM kernels of tiny (GELU, LayerNorm): norm, residual, activation,
  // attention core and loss at tp 1 and 2, micro-batches 1 and 4.
  std::set<std::string> ops;
  for (const auto& row : p.op_table) ops.insert(row.op);
  EXPECT_EQ(ops, (std::set<std::string>{"activation", "attention_core", "loss", "norm", "residual"}));
  EXPECT_TRUE(p.op_source.measured());
  EXPECT_NE(r.out.find("runtime ops"), std::string::npos);
  // Whole blocks of tiny: tp 1 at micro-batches 1 and 4, tp 2 with and without SP. One
  // rank cannot form a TP group of 2, so no with-group times.
  std::set<std::tuple<int, bool, std::int64_t>> blocks;
  for (const auto& row : p.block_table) {
    EXPECT_EQ(row.block, strata::costmodel::block_signature(strata::models::load_model("tiny")));
    EXPECT_EQ(row.fwd_with_tp_us, 0);
    blocks.insert({row.tp, row.sequence_parallel, row.micro_batch});
  }
  EXPECT_EQ(blocks, (std::set<std::tuple<int, bool, std::int64_t>>{
                        {1, false, 1}, {1, false, 4}, {2, false, 1}, {2, true, 1}, {2, false, 4}, {2, true, 4}}));
  EXPECT_TRUE(p.block_source.measured());
  EXPECT_NE(r.out.find("runtime blocks"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(CalibrateCli, JsonFormatIsOneObject) {
  const std::string path = temp_path("json.yaml");
  Result r = run("--backend cpu --quick --max-gemm-dim 128 --max-bytes 64 --format json --out " + path);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.front(), '{');
  EXPECT_NE(r.out.find("\"schema_version\": 1"), std::string::npos);
  EXPECT_NE(r.out.find("\"collectives\""), std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace

// --sustain: the GEMM rows are timed after that many seconds of back-to-back GEMMs, and the
// profile says so (the clocks a device holds under load, not an idle device's boost clock).
TEST(CalibrateCli, SustainRunsTheLoadFirstAndRecordsIt) {
  const std::string path = temp_path("sustain.yaml");
  const auto start = std::chrono::steady_clock::now();
  Result r = run("--backend cpu --quick --max-gemm-dim 128 --max-bytes 1K --sustain 0.5 --out " + path);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_GE(took, 0.5);
  EXPECT_NE(strata::read_file(path).find("after 0.5 s of back-to-back GEMMs (sustained clocks)"), std::string::npos);
  EXPECT_NE(r.out.find("sustained clocks"), std::string::npos) << r.out;
  Result bad = run("--backend cpu --quick --sustain -1 --out " + temp_path("bad.yaml"));
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("error: "), std::string::npos) << bad.err;
}

// --max-gemm-seconds: a run bounded in time (a lent GPU's minutes) keeps every GEMM row it
// measured, says in the profile how much of the sweep it covered, and still writes the
// other tables; without the bound the same sweep measures more shapes.
TEST(CalibrateCli, MaxGemmSecondsKeepsWhatWasMeasuredAndSaysSo) {
  const std::string all = temp_path("unbounded.yaml"), some = temp_path("bounded.yaml");
  const std::string args = "--backend cpu --quick --model tiny --tp-degrees 1 --max-gemm-dim 512 --max-bytes 1K --out ";
  ASSERT_EQ(run(args + all).code, 0);
  Result r = run(args + some + " --max-gemm-seconds 0.01");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto full = strata::costmodel::parse_device_profile(strata::read_file(all), all);
  const auto part = strata::costmodel::parse_device_profile(strata::read_file(some), some);
  EXPECT_GE(part.gemm_table.size(), 1u);
  EXPECT_LT(part.gemm_table.size(), full.gemm_table.size());
  EXPECT_FALSE(part.collective_table.empty());
  const std::string text = strata::read_file(some);
  EXPECT_NE(text.find("--max-gemm-seconds 0.01: "), std::string::npos) << text;
  EXPECT_EQ(strata::read_file(all).find("--max-gemm-seconds"), std::string::npos);
  Result bad = run("--backend cpu --quick --max-gemm-seconds -1 --out " + temp_path("bad.yaml"));
  EXPECT_EQ(bad.code, 2);
  std::filesystem::remove(all);
  std::filesystem::remove(some);
}
