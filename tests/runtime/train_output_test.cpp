// What a training job writes besides checkpoints (runtime/train_output.h): the metrics
// lines and how a resumed job trims the lines of steps past its checkpoint.
#include "runtime/train_output.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "common/atomic_file.h"
#include "common/errors.h"
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

fs::path temp_metrics(const char* tag) {
  return fs::temp_directory_path() / (std::string("strata_") + tag + "_" + std::to_string(::getpid()) + ".jsonl");
}

TEST(TrainOutput, ResumeKeepsTheStepsUpToTheCheckpointAndDropsACutOffLine) {
  const fs::path path = temp_metrics("trim");
  const std::string kept = metrics_of(1) + metrics_of(2);
  {
    std::ofstream out(path);
    out << kept << metrics_of(3) << "not json\n" << R"({"step": 4, "loss")";  // killed mid-line
  }
  ::testing::internal::CaptureStdout();
  { MetricsFile m(path.string(), "r1", 2); }
  const std::string said = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(read_file(path.string()), kept);
  EXPECT_NE(said.find("dropped 3 lines after step 2"), std::string::npos) << said;
  // Nothing past the step: the file is left as it is and nothing is said.
  ::testing::internal::CaptureStdout();
  { MetricsFile m(path.string(), "r1", 2); }
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
  EXPECT_EQ(read_file(path.string()), kept);
  // Lines out of order (not a prefix): the kept ones are rewritten.
  {
    std::ofstream out(path);
    out << metrics_of(5) << metrics_of(1);
  }
  ::testing::internal::CaptureStdout();
  { MetricsFile m(path.string(), "r1", 2); }
  ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(read_file(path.string()), metrics_of(1));
  fs::remove(path);
}

TEST(TrainOutput, ASecondJobOnTheSameMetricsFileIsRefusedAndTheFirstKeepsItsLines) {
  const fs::path path = temp_metrics("lock");
  StepStats s;
  s.step = 1;
  MetricsFile first(path.string(), "run-a", std::nullopt);
  first.write(s, 0.1);
  try {
    MetricsFile second(path.string(), "run-b", std::nullopt);
    ADD_FAILURE() << "a second writer was let in";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("being written by another `strata train` job"), std::string::npos)
        << e.what();
  }
  s.step = 2;
  first.write(s, 0.1);
  const std::string text = read_file(path.string());
  ASSERT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  for (std::size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1)
    EXPECT_EQ(parse_json(text.substr(at, nl - at))["run"], "run-a");
  fs::remove(path);
}

TEST(TrainOutput, AFreshJobEmptiesTheFileOnlyAfterTakingTheLock) {
  const fs::path path = temp_metrics("fresh");
  { std::ofstream(path) << "old line\n"; }
  { MetricsFile m(path.string(), "r", std::nullopt); }
  EXPECT_EQ(read_file(path.string()), "");
  fs::remove(path);
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
