#include "runtime/train_settings.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "common/errors.h"

namespace sr = strata::runtime;

namespace {

// The InputError message train_config gives for `s`, or "" when it accepts them.
std::string train_config_refusal(const sr::TrainSettings& s) {
  try {
    sr::train_config(s);
  } catch (const strata::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(TrainSettings, DefaultsGiveTheFlagsDocumentedDefaults) {
  sr::TrainSettings s;
  s.steps = 40;
  s.lr = 3e-4;
  s.lr_schedule = "cosine";
  const sr::TrainConfig c = sr::train_config(s);
  EXPECT_EQ(c.steps, 40);
  EXPECT_EQ(c.adamw.lr, 3e-4);
  EXPECT_EQ(c.lr_schedule.decay, sr::LrDecay::Cosine);
  EXPECT_DOUBLE_EQ(c.lr_schedule.min, 3e-5);  // --min-lr: --lr / 10
  EXPECT_EQ(c.lr_schedule.decay_steps, 40);   // --decay-steps: --steps
  EXPECT_EQ(c.data, sr::DataKind::Synthetic);
  EXPECT_TRUE(c.overlap_grad_reduce);
  EXPECT_TRUE(c.zero_prefetch);
  EXPECT_EQ(c.cp_kv_exchange, sr::CpKvExchange::Ring);
}

TEST(TrainSettings, DataFlagsAndSwitchesReachTheConfig) {
  sr::TrainSettings s;
  s.text = "corpus.txt";
  s.no_overlap_grad_reduce = true;
  s.no_zero_prefetch = true;
  s.cp_kv_exchange = "all-gather";
  s.grad_bucket_params = 1000;
  const sr::TrainConfig c = sr::train_config(s);
  EXPECT_EQ(c.data, sr::DataKind::TextFile);
  EXPECT_EQ(c.data_path, "corpus.txt");
  EXPECT_FALSE(c.overlap_grad_reduce);
  EXPECT_FALSE(c.zero_prefetch);
  EXPECT_EQ(c.cp_kv_exchange, sr::CpKvExchange::AllGather);
  EXPECT_EQ(c.grad_bucket_params, 1000);
}

TEST(TrainSettings, BadValuesAreRefusedByTheirFlag) {
  sr::TrainSettings s;
  s.lr = 0;
  EXPECT_EQ(train_config_refusal(s), "--lr (0) must be > 0");
  s = {};
  s.beta1 = std::nan("");
  EXPECT_EQ(train_config_refusal(s), "--beta1 (nan) must be a finite number");
  s = {};
  s.beta2 = 1;
  EXPECT_EQ(train_config_refusal(s), "--beta2 (1) must be in [0, 1)");
  s = {};
  s.log_every = 0;
  EXPECT_EQ(train_config_refusal(s), "--log-every (0) must be >= 1");
  s = {};
  s.resume = true;
  EXPECT_EQ(train_config_refusal(s), "--resume needs --checkpoint-dir");
  s = {};
  s.given.insert("--checkpoint-dir");
  EXPECT_EQ(train_config_refusal(s), "--checkpoint-dir: expected a path, got an empty string");
}
