// Step timings read from training logs in each framework's own format (calibration/training_log.h).
// The fixture lines follow the format strings of the frameworks' sources: Megatron-LM
// training_log() (megatron/training/training.py), NeMo's Lightning progress bar and NeMo 2
// console lines ("train_step_timing in s=..." / ": ..."), TorchTitan's MetricsProcessor.log
// (torchtitan/components/metrics.py, with its ANSI colours).
#include <gtest/gtest.h>

#include <string>

#include "calibration/training_log.h"
#include "common/errors.h"

namespace {

using strata::calibration::parse_training_log;

TEST(TrainingLog, MegatronIterationLinesGiveMillisecondsAsSeconds) {
  const std::string log =
      " [2025-08-01 07:19:37] iteration        1/    5000 | consumed samples:          128 | elapsed time per "
      "iteration (ms): 19138.8 | learning rate: 6.976744E-08 | global batch size:   128 | lm loss: 1.043863E+01 |\n"
      " [2025-08-01 07:19:50] iteration        2/    5000 | consumed samples:          256 | elapsed time per "
      "iteration (ms): 13105.3 | learning rate: 1.2E-05 | global batch size:   128 |\n"
      " [2025-08-01 07:20:03] iteration        3/    5000 | consumed samples:          384 | elapsed time per "
      "iteration (ms): 13201.7 | learning rate: 1.3E-05 | global batch size:   128 |\n"
      " [2025-08-01 07:20:16] iteration        4/    5000 | consumed samples:          512 | elapsed time per "
      "iteration (ms): 13150.0 | learning rate: 1.4E-05 | global batch size:   128 |\n";
  const auto t = parse_training_log(log, "megatron.log");
  EXPECT_EQ(t.format, "megatron");
  ASSERT_EQ(t.values.size(), 4u);
  EXPECT_EQ(t.skipped, 1);                    // the first interval holds compilation and warm-up
  EXPECT_NEAR(t.median, 13.150, 1e-9);        // median of 13.1053, 13.2017, 13.150
}

// BigScience's Megatron-DeepSpeed (megatron/training.py at 8387ae17) logs seconds with two decimals;
// the lines are BLOOM-176B's own (bigscience-workshop/bigscience train/tr11-176B-ml/reshaping-log.md).
TEST(TrainingLog, MegatronDeepSpeedIterationLinesGiveSeconds) {
  const std::string log =
      "[default7]: iteration    94768/  115311 | consumed samples:    177927088 | consumed tokens: 364394676224 | "
      "elapsed time per iteration (s): 261.08 | learning rate: 7.610E-06 | global batch size:  2048 |\n"
      "[default7]: iteration    94769/  115311 | consumed samples:    177929136 | consumed tokens: 364398870528 | "
      "elapsed time per iteration (s): 220.73 | learning rate: 7.609E-06 | global batch size:  2048 |\n"
      "[default7]: iteration    94770/  115311 | consumed samples:    177931184 | consumed tokens: 364403064832 | "
      "elapsed time per iteration (s): 220.30 | learning rate: 7.609E-06 | global batch size:  2048 |\n";
  const auto t = parse_training_log(log, "bloom.log");
  EXPECT_EQ(t.format, "megatron-deepspeed");
  ASSERT_EQ(t.values.size(), 3u);
  EXPECT_EQ(t.skipped, 1);
  EXPECT_NEAR(t.median, 0.5 * (220.73 + 220.30), 1e-9);  // seconds, not milliseconds
  // One job per log: a Megatron-LM line among them is another job's.
  EXPECT_THROW(parse_training_log(log + "elapsed time per iteration (ms): 100.0 |\n", "mixed.log"), strata::InputError);
}

TEST(TrainingLog, NemoProgressBarAndConsoleFormats) {
  const std::string bar =
      "Epoch 0: : 100%|##########| 100/100 [10:48<00:00, reduced_train_loss=0.0172, global_step=99.00, "
      "consumed_samples=25600.0, train_step_timing in s=3.130]\n"
      "Epoch 0: : 100%|##########| 101/100 [10:51<00:00, reduced_train_loss=0.0170, global_step=100.0, "
      "consumed_samples=25856.0, train_step_timing in s=3.150]\n";
  const auto a = parse_training_log(bar, "nemo.log", 0);
  EXPECT_EQ(a.format, "nemo");
  EXPECT_NEAR(a.median, 3.140, 1e-9);
  const std::string console =
      "Training epoch 0, iteration 0/249 | lr: 1.961e-06 | global_batch_size: 8 | global_step: 0 | "
      "reduced_train_loss: 1.315 | train_step_timing in s: 7.126\n"
      "Training epoch 0, iteration 1/249 | lr: 3.922e-06 | global_batch_size: 8 | global_step: 1 | "
      "reduced_train_loss: 1.653 | train_step_timing in s: 2.505 | consumed_samples: 16\n";
  const auto b = parse_training_log(console, "nemo2.log");
  EXPECT_EQ(b.values.size(), 2u);
  EXPECT_NEAR(b.median, 2.505, 1e-12);  // the 7.1 s first step is warm-up
}

TEST(TrainingLog, TorchTitanStepLinesGiveTokensPerSecondPerGpu) {
  const std::string log =
      "[rank0]:[titan] 2025-01-01 12:00:00,000 - root - INFO - \x1b[31mstep:  1  \x1b[32mloss: 12.2345  "
      "\x1b[33mmemory: 42.10GiB(44.31%)  \x1b[34mtps: 1,024  \x1b[36mtflops: 47.20  \x1b[35mmfu: 4.77%\x1b[39m\n"
      "[rank0]:[titan] 2025-01-01 12:00:10,000 - root - INFO - \x1b[31mstep: 10  \x1b[32mloss:  9.8765  "
      "\x1b[33mmemory: 52.10GiB(54.83%)  \x1b[34mtps: 7,421  \x1b[36mtflops: 342.11  \x1b[35mmfu: 34.59%\x1b[39m\n";
  const auto t = parse_training_log(log, "titan.log");
  EXPECT_EQ(t.format, "torchtitan");
  EXPECT_TRUE(t.tokens_per_s_per_gpu());
  EXPECT_DOUBLE_EQ(t.median, 7421.0);  // thousands separators read
}

TEST(TrainingLog, LogsWithoutTimingOrWithTwoFormatsAreErrors) {
  EXPECT_THROW(parse_training_log("loading checkpoint\nstarting training\n", "empty.log"), strata::InputError);
  EXPECT_THROW(parse_training_log("", "empty.log"), strata::InputError);
  EXPECT_THROW(parse_training_log("elapsed time per iteration (ms): 100.0 |\ntrain_step_timing in s=3.1\n", "mixed.log"),
               strata::InputError);
  try {
    parse_training_log("elapsed time per iteration (ms): -5.0 |\n", "neg.log");
    FAIL() << "a negative step time was accepted";
  } catch (const strata::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("neg.log:1"), std::string::npos) << e.what();
  }
}

TEST(TrainingLog, OneTimingLineIsKeptEvenThoughWarmUpIsSkipped) {
  const auto t = parse_training_log("train_step_timing in s: 4.5\n", "one.log", 3);
  EXPECT_EQ(t.skipped, 0);
  EXPECT_DOUBLE_EQ(t.median, 4.5);
}

}  // namespace
