#include "costmodel/block_table.h"

#include <cmath>

#include <gtest/gtest.h>

#include "common/errors.h"
#include "models/catalog.h"

namespace sc = strata::costmodel;

namespace {
const std::string kSig = "hidden 64, heads 4, kv_heads 4, ffn 256, seq 32, layernorm, gelu, learned";
}

TEST(BlockSignature, NamesEverythingThatChangesABlockAndNothingElse) {
  auto tiny = strata::models::load_model("tiny");
  EXPECT_EQ(sc::block_signature(tiny), kSig);
  auto deeper = tiny;
  deeper.layers = 12, deeper.vocab = 50257, deeper.name = "other";
  EXPECT_EQ(sc::block_signature(deeper), kSig);
  for (auto change : {+[](strata::models::ModelSpec& s) { s.hidden = 128; },
                      +[](strata::models::ModelSpec& s) { s.kv_heads = 2; },
                      +[](strata::models::ModelSpec& s) { s.ffn = 512; },
                      +[](strata::models::ModelSpec& s) { s.seq_len = 64; },
                      +[](strata::models::ModelSpec& s) { s.norm = strata::models::Norm::RmsNorm; },
                      +[](strata::models::ModelSpec& s) { s.activation = strata::models::Activation::SwiGlu; },
                      +[](strata::models::ModelSpec& s) { s.positions = strata::models::Positions::Rope; }}) {
    auto s = tiny;
    change(s);
    EXPECT_NE(sc::block_signature(s), kSig);
  }
}

TEST(MeasuredBlockTable, KeysByShapeTpAndSequenceParallelAndInterpolatesOverMicroBatch) {
  sc::MeasuredBlockTable t({{kSig, 1, false, 1, 100, 200, 0, 0},
                            {kSig, 1, false, 4, 300, 700, 0, 0},
                            {kSig, 2, false, 4, 180, 400, 0, 0},
                            {kSig, 2, true, 4, 150, 350, 0, 0}});
  auto e = t.estimate(kSig, 1, false, 4);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->source, sc::TimeSource::Measured);
  EXPECT_NEAR(e->fwd_s, 300e-6, 1e-15);
  EXPECT_NEAR(e->bwd_s, 700e-6, 1e-15);
  EXPECT_FALSE(e->has_tp);
  // Between measured micro-batches: geometric in log-log space; outside: linear.
  e = t.estimate(kSig, 1, false, 2);
  EXPECT_EQ(e->source, sc::TimeSource::Interpolated);
  EXPECT_NEAR(e->fwd_s, std::sqrt(100e-6 * 300e-6), 1e-12);
  EXPECT_NEAR(t.estimate(kSig, 1, false, 16)->bwd_s, 4 * 700e-6, 1e-12);
  // SP on one rank is the same block as without it.
  EXPECT_NEAR(t.estimate(kSig, 1, true, 4)->fwd_s, 300e-6, 1e-15);
  EXPECT_NEAR(t.estimate(kSig, 2, true, 4)->fwd_s, 150e-6, 1e-15);
  EXPECT_NEAR(t.estimate(kSig, 2, false, 4)->fwd_s, 180e-6, 1e-15);
  EXPECT_FALSE(t.estimate(kSig, 4, false, 4));
  EXPECT_FALSE(t.estimate("hidden 128", 1, false, 4));
}

TEST(MeasuredBlockTable, TpCommunicationIsWithGroupMinusComputeNeverNegative) {
  sc::MeasuredBlockTable t({{kSig, 2, false, 4, 180, 400, 250, 520}, {kSig, 2, true, 4, 150, 350, 140, 500}});
  auto e = t.estimate(kSig, 2, false, 4);
  ASSERT_TRUE(e && e->has_tp);
  EXPECT_NEAR(e->tp_fwd_s, 70e-6, 1e-12);
  EXPECT_NEAR(e->tp_bwd_s, 120e-6, 1e-12);
  e = t.estimate(kSig, 2, true, 4);  // noise made with-group faster than compute: 0, not negative
  EXPECT_EQ(e->tp_fwd_s, 0);
  EXPECT_NEAR(e->tp_bwd_s, 150e-6, 1e-12);
}

TEST(MeasuredBlockTable, RejectsRowsThatCannotBeRight) {
  EXPECT_THROW(sc::MeasuredBlockTable({{"", 1, false, 1, 1, 1, 0, 0}}), strata::InputError);
  EXPECT_THROW(sc::MeasuredBlockTable({{kSig, 0, false, 1, 1, 1, 0, 0}}), strata::InputError);
  EXPECT_THROW(sc::MeasuredBlockTable({{kSig, 1, false, 0, 1, 1, 0, 0}}), strata::InputError);
  EXPECT_THROW(sc::MeasuredBlockTable({{kSig, 1, false, 1, 0, 1, 0, 0}}), strata::InputError);
  EXPECT_THROW(sc::MeasuredBlockTable({{kSig, 1, false, 1, 1, 1, 2, 2}}), strata::InputError);
  EXPECT_THROW(sc::MeasuredBlockTable({{kSig, 2, false, 1, 1, 1, 2, 0}}), strata::InputError);
  EXPECT_TRUE(sc::MeasuredBlockTable({}).empty());
}
