#include "costmodel/userbuffers_gemm.h"

#include <gtest/gtest.h>

#include "test_profiles.h"

namespace sc = strata::costmodel;
namespace sm = strata::models;
using sc::DType;

namespace {

using sc::testing::gemm_row;

sm::Op op_of(sm::OpKind kind) {
  sm::Op op;
  op.kind = kind;
  return op;
}

}  // namespace

// TE's default userbuffers config: ring exchange in tp chunks before the column-parallel
// GEMMs and for the row-parallel dgrad, pipeline in 4 chunks after the row-parallel forward.
TEST(UserbuffersGemm, ChunksFollowTheDefaultConfig) {
  for (auto k : {sm::OpKind::Qkv, sm::OpKind::MlpUp, sm::OpKind::MlpGate}) {
    const auto c = sc::userbuffers_chunks(op_of(k), 8);
    EXPECT_EQ(c.fwd, 8);
    EXPECT_EQ(c.dgrad, 1);  // bulk overlap: the dgrad runs whole
  }
  for (auto k : {sm::OpKind::OutProj, sm::OpKind::MlpDown}) {
    const auto c = sc::userbuffers_chunks(op_of(k), 8);
    EXPECT_EQ(c.fwd, 4);
    EXPECT_EQ(c.dgrad, 8);
  }
  for (auto k : {sm::OpKind::LmHead, sm::OpKind::Router, sm::OpKind::Norm}) {
    const auto c = sc::userbuffers_chunks(op_of(k), 8);
    EXPECT_EQ(c.fwd, 1);
    EXPECT_EQ(c.dgrad, 1);
  }
  EXPECT_EQ(sc::userbuffers_chunks(op_of(sm::OpKind::Qkv), 1).fwd, 1);  // no TP, no overlap
  sm::Op expert = op_of(sm::OpKind::ExpertUp);
  expert.routed_expert = true;
  EXPECT_EQ(sc::userbuffers_chunks(expert, 8).fwd, 1);
}

// A GEMM of 4096 rows in 4 chunks costs 4 measured 1024-row GEMMs, not one 4096-row one.
TEST(UserbuffersGemm, ChunkedTimeIsTheSumOfTheSmallerMeasuredGemms) {
  auto p = sc::testing::toy_device();
  p.gemm_source = {"measured", {{"tool", "unit test"}}};
  // m sweep at n = 2048, k = 1024; dgrad (m, k = 1024, n = 2048) and wgrad (1024, 2048, m).
  p.gemm_table = {gemm_row(1024, 2048, 1024, 20), gemm_row(4096, 2048, 1024, 50), gemm_row(1024, 1024, 2048, 22),
                  gemm_row(4096, 1024, 2048, 55), gemm_row(1024, 2048, 4096, 48)};
  const sc::GemmCost g(p);
  const auto whole = sc::chunked_gemm_time(g, 4096, 2048, 1024, {}, DType::Bf16);
  EXPECT_DOUBLE_EQ(whole.fwd_s, 50e-6);
  EXPECT_DOUBLE_EQ(whole.dgrad_s, 55e-6);
  EXPECT_DOUBLE_EQ(whole.wgrad_s, 48e-6);
  const auto split = sc::chunked_gemm_time(g, 4096, 2048, 1024, {4, 4}, DType::Bf16);
  EXPECT_DOUBLE_EQ(split.fwd_s, 4 * 20e-6);
  EXPECT_DOUBLE_EQ(split.dgrad_s, 4 * 22e-6);
  EXPECT_DOUBLE_EQ(split.wgrad_s, 48e-6);  // the weight gradient is never chunked
}

// Exposed communication, by hand. Ring exchange, 4 chunks, GEMM 8: three transfers hide
// behind three GEMM chunks (6). Pipeline: the last reduce-scatter chunk always waits.
TEST(UserbuffersGemm, ExposedCommunicationByHand) {
  EXPECT_DOUBLE_EQ(sc::ring_exchange_exposed(4, 8, 4), 0.0);
  EXPECT_DOUBLE_EQ(sc::ring_exchange_exposed(10, 8, 4), 4.0);
  EXPECT_DOUBLE_EQ(sc::pipeline_exposed(4, 8, 4), 1.0);    // comm / 4
  EXPECT_DOUBLE_EQ(sc::pipeline_exposed(10, 8, 4), 4.0);   // 10 - 6
  EXPECT_DOUBLE_EQ(sc::pipeline_exposed(10, 8, 1), 10.0);  // one chunk: nothing overlaps
  EXPECT_DOUBLE_EQ(sc::ring_exchange_exposed(10, 8, 1), 10.0);
}
