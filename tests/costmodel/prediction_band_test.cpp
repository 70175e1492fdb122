// costmodel::mfu_warning: a prediction is flagged when its MFU, even at the slow end of its
// band, is above the best that published runs on the device reached. The published maxima
// are written out by hand from costmodel/stacks/residuals.yaml (H100: 60.0%, NVIDIA
// dgxc-benchmarking v25.02; A100: 41.1%, Narayanan et al. 2021 Table 2 + the Megatron-LM
// README; H100 FP8: 87.0%, the same dgxc set's FP8 rows), not read back from the table the
// function reads.
#include "costmodel/prediction_band.h"

#include <gtest/gtest.h>

namespace strata::costmodel {
namespace {

TEST(MfuWarning, WarnsAboveTheDevicesHighestPublishedMfuAndNamesIt) {
  const std::string w = mfu_warning("h100-sxm-80gb", 0.65);
  EXPECT_EQ(w.rfind("warning: predicted MFU 65.0% (65.0% at the slow end of its band)", 0), 0u) << w;
  EXPECT_NE(w.find("on h100-sxm-80gb"), std::string::npos) << w;
  EXPECT_NE(w.find("(60.0%, NVIDIA dgxc-benchmarking v25.02"), std::string::npos) << w;
  EXPECT_NE(w.find("optimistic"), std::string::npos) << w;
  // The A100's best published run is a different set, at 41.1%.
  const std::string a = mfu_warning("a100-sxm-80gb", 0.45);
  EXPECT_NE(a.find("(41.1%, Narayanan et al. 2021 Table 2"), std::string::npos) << a;
}

TEST(MfuWarning, QuietAtOrBelowThePublishedBestAndForDevicesWithoutPublishedRuns) {
  EXPECT_EQ(mfu_warning("h100-sxm-80gb", 0.59), "");
  EXPECT_EQ(mfu_warning("h100-sxm-80gb", 0.600), "") << "reaching the best published run is not above it";
  EXPECT_EQ(mfu_warning("a100-sxm-80gb", 0.40), "");
  // Each device against its own runs: 45% is above every A100 run but below the H100's best.
  EXPECT_EQ(mfu_warning("h100-sxm-80gb", 0.45), "");
  EXPECT_NE(mfu_warning("a100-sxm-80gb", 0.45), "");
  // No published MFU for the device: nothing to compare with, whatever the prediction.
  EXPECT_EQ(mfu_warning("x100-made-up", 0.95), "");
  EXPECT_EQ(mfu_warning("", 0.95), "");
}

TEST(MfuWarning, TheSlowEndOfTheBandDecides) {
  // 65% predicted with real steps up to 1.2x slower: 54.2% at the slow end, under 60%.
  EXPECT_EQ(mfu_warning("h100-sxm-80gb", 0.65, 1.2), "");
  const std::string w = mfu_warning("h100-sxm-80gb", 0.70, 1.1);  // 63.6% at the slow end
  EXPECT_EQ(w.rfind("warning: predicted MFU 70.0% (63.6% at the slow end of its band)", 0), 0u) << w;
  // A band entirely on the fast side (high < 1) does not make the prediction look slower.
  EXPECT_NE(mfu_warning("h100-sxm-80gb", 0.62, 0.9).find("(62.0% at the slow end"), std::string::npos);
}

// FP8 GEMMs run at twice the 16-bit peak that MFU counts against, so an FP8 plan is held to
// the published FP8 runs (H100: 87.0%), a 16-bit plan to the 16-bit ones (60.0%); a device with
// no published FP8 run gives an FP8 plan nothing to compare with.
TEST(MfuWarning, Fp8PlansAgainstPublishedFp8Runs) {
  EXPECT_EQ(mfu_warning("h100-sxm-80gb", 0.83, 1.0, /*fp8=*/true), "");  // Bridge's Llama 3.1 405B FP8 layout
  EXPECT_NE(mfu_warning("h100-sxm-80gb", 0.83, 1.0, /*fp8=*/false), "");
  const std::string w = mfu_warning("h100-sxm-80gb", 0.90, 1.0, /*fp8=*/true);
  EXPECT_NE(w.find("above the highest of the published FP8 runs on h100-sxm-80gb"), std::string::npos) << w;
  EXPECT_NE(w.find("(87.0%, NVIDIA dgxc-benchmarking v25.02"), std::string::npos) << w;
  EXPECT_EQ(mfu_warning("a100-sxm-80gb", 0.95, 1.0, /*fp8=*/true), "");  // no FP8 run on A100
}

}  // namespace
}  // namespace strata::costmodel
