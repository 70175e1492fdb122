// calibrate(): bad requests fail with an InputError naming the flag before MPI starts
// or anything is measured, after the caller's output check has run.
#include <gtest/gtest.h>

#include <string>

#include "calibration/calibrate.h"
#include "common/errors.h"

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
