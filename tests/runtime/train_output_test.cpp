// What a training job writes besides checkpoints (runtime/train_output.h): the metrics
// lines and how a resumed job trims the lines of steps past its checkpoint.
#include "runtime/train_output.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "common/atomic_file.h"
#include "common/json_text.h"

namespace strata::runtime {
namespace {

namespace fs = std::filesystem;

std::string metrics_of(std::int64_t step) {
  StepStats s;
  s.step = step;
  s.loss = 5.5;
  s.step_s = 0.25;
  return metrics_line(s, 0.2);
}

TEST(TrainOutput, MetricsLineHoldsTheKeysValidateReads) {
  const std::string line = metrics_of(3);
  ASSERT_EQ(line.back(), '\n');
  const auto j = parse_json(line);
  EXPECT_EQ(j["step"], 3);
  EXPECT_EQ(j["step_s"], 0.25);
  EXPECT_EQ(j["predicted_step_s"], 0.2);
  for (const char* key : {"loss", "tokens_per_s", "grad_norm", "lr", "gemm_s", "dp_wait_s"})
    EXPECT_TRUE(j.contains(key)) << key;
}

TEST(TrainOutput, TrimKeepsTheStepsUpToTheCheckpointAndDropsACutOffLine) {
  const fs::path path = fs::temp_directory_path() / ("strata_trim_" + std::to_string(::getpid()) + ".jsonl");
  const std::string kept = metrics_of(1) + metrics_of(2);
  {
    std::ofstream out(path);
    out << kept << metrics_of(3) << "not json\n" << R"({"step": 4, "loss")";  // killed mid-line
  }
  ::testing::internal::CaptureStdout();
  trim_metrics(path.string(), 2);
  const std::string said = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(read_file(path.string()), kept);
  EXPECT_NE(said.find("dropped 3 lines after step 2"), std::string::npos) << said;
  // Nothing past the step: the file is left as it is and nothing is said.
  ::testing::internal::CaptureStdout();
  trim_metrics(path.string(), 2);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
  fs::remove(path);
  trim_metrics(path.string(), 2);  // a missing file is no error
  EXPECT_FALSE(fs::exists(path));
}

TEST(TrainOutput, NamesTheDataAndTheBytes) {
  TrainConfig c;
  EXPECT_EQ(data_description(c), "synthetic");
  c.data = DataKind::TokenFile;
  c.data_path = "d.bin";
  EXPECT_EQ(data_description(c), "token file d.bin");
  EXPECT_EQ(byte_text(3 << 20), "3145728 B (3.00 MiB)");
}

}  // namespace
}  // namespace strata::runtime
