#include "calibration/op_benchmark.h"
#include "calibration/calibrate.h"

#include <cmath>
#include <limits>
#include <map>

#include <gtest/gtest.h>

#include "calibration/detail/calibration_steps.h"
#include "common/errors.h"
#include "models/catalog.h"
#include "tests/calibration/plan_file.h"
#include "runtime/fast_math.h"

namespace sr = strata::runtime;
namespace scl = strata::calibration;

TEST(FastExp, AgreesWithLibmToAFewUlps) {
  double worst = 0;
  for (float x = -80.0f; x <= 80.0f; x += 0.0137f) {
    const double ref = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::fabs(sr::fast_expf(x) - ref) / ref);
  }
  EXPECT_LT(worst, 4e-7);
  EXPECT_EQ(sr::fast_expf(0.0f), 1.0f);
  // Clamped ends: tiny but positive, large but finite.
  EXPECT_GT(sr::fast_expf(-1000.0f), 0.0f);
  EXPECT_LT(sr::fast_expf(-1000.0f), 1e-37f);
  EXPECT_TRUE(std::isfinite(sr::fast_expf(1000.0f)));
  EXPECT_TRUE(std::isfinite(sr::fast_expf(std::numeric_limits<float>::infinity())));
  // double keeps libm.
  EXPECT_EQ(sr::fast_exp(0.5), std::exp(0.5));
}

TEST(OpBenchmark, TimesEachNonGemmKindAtTheWorkTheCostModelCounts) {
  const auto spec = strata::models::load_model("tiny");  // h 64, f 256, s 32, 4 heads, V 256
  scl::OpBenchmarkOptions o;
  o.tp_degrees = {1, 2};
  o.micro_batches = {1, 2};
  o.timing = {0, 1, 3, 0.001};
  int calls = 0;
  const auto rows = scl::benchmark_ops(spec, o, [&](int done, int total) {
    ++calls;
    EXPECT_LE(done, total);
  });
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(calls, static_cast<int>(rows.size()));
  std::map<std::string, std::vector<double>> work;
  for (const auto& r : rows) {
    EXPECT_GT(r.sample.fwd_us, 0) << r.sample.op;
    EXPECT_GT(r.sample.bwd_us, 0) << r.sample.op;
    work[r.sample.op].push_back(r.sample.work);
  }
  EXPECT_EQ(work.size(), 5u);  // norm, residual, activation, attention_core, loss
  auto has = [&](const std::string& op, double w) {
    const auto& v = work[op];
    return std::find(v.begin(), v.end(), w) != v.end();
  };
  // fp32 bytes by hand: LayerNorm reads x, writes y: 2 x 4 B x 32 tokens x 64.
  EXPECT_TRUE(has("norm", 2.0 * 4 * 32 * 64));
  EXPECT_TRUE(has("norm", 2.0 * 4 * 64 * 64));  // micro-batch 2
  // GELU on the tp-2 shard of ffn: 2 x 4 B x 32 x 128.
  EXPECT_TRUE(has("activation", 2.0 * 4 * 32 * 128));
  // Attention: 4 b s^2 h FLOPs, over tp.
  EXPECT_TRUE(has("attention_core", 4.0 * 32 * 32 * 64));
  EXPECT_TRUE(has("attention_core", 4.0 * 32 * 32 * 64 / 2));
  // Norm work does not change with tp (replicated without SP): 2 micro-batch sizes only.
  EXPECT_EQ(work["norm"].size(), 2u);

  o.tp_degrees = {3};
  EXPECT_THROW(scl::benchmark_ops(spec, o), strata::InputError);
}

// calibrate(): bad requests fail with an InputError naming the flag before MPI starts
// or anything is measured, after the caller's output check has run.
namespace strata::calibration {
namespace {

// The InputError message of calibrate(request), or "" when it throws none of them.
std::string input_error_of(const CalibrationRequest& request, int* checks = nullptr) {
  CalibrationOutput io;
  io.check_out = [checks](const std::string&) {
    if (checks) ++*checks;
  };
  io.emit = [](const std::string&, const std::string&) { ADD_FAILURE() << "emitted a profile"; };
  try {
    calibrate(request, io);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

CalibrationRequest valid() {
  CalibrationRequest r;
  r.out = "profile.yaml";
  return r;
}

TEST(Calibrate, OutIsRequiredAndChecked) {
  CalibrationRequest r = valid();
  r.out.clear();
  EXPECT_NE(input_error_of(r).find("--out is required"), std::string::npos);
  int checks = 0;
  r = valid();
  r.tp_degrees = {0};
  EXPECT_NE(input_error_of(r, &checks).find("--tp-degrees (0)"), std::string::npos);
  EXPECT_EQ(checks, 1);
}

// --model takes a plan file, as --model does on the other commands: the GEMM shapes swept
// are those of the plan's model (one in no catalog), read before anything is measured.
TEST(Calibrate, ModelMayBeAPlanFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("strata_calibrate_plan_" + std::to_string(::getpid()));
  CalibrationRequest r = valid();
  r.models = {strata::testing::write_plan_of_a_cut_llama(dir, "cut.yaml")};
  CalibrationOutput io;
  io.check_out = [](const std::string&) {};
  const auto plan = scl::detail::plan_sweep(r, io);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(plan.graphs.size(), 1u);
  EXPECT_EQ(plan.graphs[0].spec().name, "llama3-8b-cut12");
  EXPECT_EQ(plan.graphs[0].spec().layers, 12);
  // A file that is neither a plan nor a model stays one error naming --model.
  r.models = {"no-such-model-or-plan.yaml"};
  EXPECT_NE(input_error_of(r).find("--model"), std::string::npos);
}

TEST(Calibrate, RejectsBadSizesAndDtypesNamingTheFlag) {
  CalibrationRequest r = valid();
  r.micro_batch = 0;
  EXPECT_NE(input_error_of(r).find("--micro-batch (0)"), std::string::npos);
  r = valid();
  r.max_bytes = "12Q";
  EXPECT_NE(input_error_of(r).find("--max-bytes (12Q): unknown unit 'q'"), std::string::npos);
  r = valid();
  r.max_bytes = "4";
  EXPECT_NE(input_error_of(r).find("between 8 B and 16 GiB"), std::string::npos);
  r = valid();
  r.max_gemm_dim = 100000;
  EXPECT_NE(input_error_of(r).find("--max-gemm-dim (100000)"), std::string::npos);
  r = valid();
  r.dtypes = {"bf16"};
  EXPECT_NE(input_error_of(r).find("the cpu backend runs fp32 only"), std::string::npos);
  r = valid();
  r.models = {"no-such-model"};
  EXPECT_EQ(input_error_of(r).rfind("--model: ", 0), 0u);
}

}  // namespace
}  // namespace strata::calibration
