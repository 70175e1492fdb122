#include "costmodel/op_cost.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "test_profiles.h"

namespace sc = strata::costmodel;
namespace sm = strata::models;
using sc::DType;

namespace {

sm::Op gemm_op(sm::OpKind kind, sm::Sharding sh, std::int64_t m, std::int64_t n, std::int64_t k) {
  sm::Op op;
  op.kind = kind;
  op.sharding = sh;
  op.gemm = {m, n, k};
  op.flops_fwd = 2.0 * m * n * k;
  op.flops_bwd = 2 * op.flops_fwd;
  return op;
}

}  // namespace

TEST(OpCost, GemmsAreShardedAsMegatronSplitsThem) {
  auto p = sc::testing::toy_device();
  sc::OpCost oc(p);
  sc::GemmCost g(p);
  const std::int64_t m = 8192, h = 12288;
  // Column-parallel QKV: n / tp.
  auto qkv = gemm_op(sm::OpKind::Qkv, sm::Sharding::ColumnParallel, m, 3 * h, h);
  auto t = oc.time(qkv, 8, false, DType::Bf16);
  EXPECT_DOUBLE_EQ(t.fwd_s, g.time_s(m, 3 * h / 8, h, DType::Bf16));
  EXPECT_DOUBLE_EQ(t.bwd_s, g.time_s(m, h, 3 * h / 8, DType::Bf16) + g.time_s(h, 3 * h / 8, m, DType::Bf16));
  // Row-parallel MLP down: k / tp. Compute bound, so time = flops / tp / (peak * eff).
  auto down = gemm_op(sm::OpKind::MlpDown, sm::Sharding::RowParallel, m, h, 4 * h);
  auto d = oc.time(down, 4, true, DType::Bf16);
  EXPECT_NEAR(d.fwd_s, 2.0 * m * h * 4 * h / 4 / (400e12 * 0.8), 1e-12);
  EXPECT_NEAR(d.bwd_s, 2 * d.fwd_s, 1e-12);
  // Vocab-parallel LM head: n / tp.
  auto head = gemm_op(sm::OpKind::LmHead, sm::Sharding::VocabParallel, m, 51200, h);
  EXPECT_DOUBLE_EQ(oc.time(head, 2, false, DType::Bf16).fwd_s, g.time_s(m, 25600, h, DType::Bf16));
  // tp = 1 is the unsharded GEMM.
  EXPECT_DOUBLE_EQ(oc.time(qkv, 1, false, DType::Bf16).fwd_s, g.time_s(m, 3 * h, h, DType::Bf16));
}

TEST(OpCost, AttentionCoreIsCausalFlashAtTheAttentionEfficiency) {
  sc::OpCost oc(sc::testing::toy_device());
  sm::Op att;
  att.kind = sm::OpKind::AttentionCore;
  att.sharding = sm::Sharding::HeadParallel;
  const double b = 1, s = 2048, h = 12288;
  att.flops_fwd = 4 * b * s * s * h;
  att.flops_bwd = 2 * att.flops_fwd;
  auto t = oc.time(att, 8, false, DType::Bf16);
  const double fwd = 0.5 * 4 * b * s * s * h / 8 / (400e12 * 0.5);
  EXPECT_NEAR(t.fwd_s, fwd, 1e-15);
  EXPECT_NEAR(t.bwd_s, 2.5 * fwd, 1e-15);
}

// Each fused kernel at its own efficiency where the device gives one (cuDNN, FlashAttention-1),
// FlashAttention-2's otherwise.
TEST(OpCost, EachFusedAttentionKernelAtItsDevicesEfficiency) {
  auto p = sc::testing::toy_device();  // attention 0.5 of 400 TFLOP/s
  sm::Op att;
  att.kind = sm::OpKind::AttentionCore;
  att.sharding = sm::Sharding::HeadParallel;
  const double s = 4096, h = 4096;
  att.flops_fwd = 4 * s * s * h;
  att.flops_bwd = 2 * att.flops_fwd;
  const double flops = 0.5 * att.flops_fwd;  // causal half, tp 1
  auto fwd = [&](sc::AttentionKernel k, const sc::DeviceProfile& d) {
    sc::OpCostOptions o;
    o.attention = k;
    return sc::OpCost(d, o).time(att, 1, false, DType::Bf16).fwd_s;
  };
  EXPECT_NEAR(fwd(sc::AttentionKernel::Flash1, p), flops / (400e12 * 0.5), 1e-12);  // no flash1 rate: FA2's
  p.attention_flash1_efficiency = 0.3;
  p.attention_cudnn_efficiency = 0.6;
  EXPECT_NEAR(fwd(sc::AttentionKernel::Flash1, p), flops / (400e12 * 0.3), 1e-12);
  EXPECT_NEAR(fwd(sc::AttentionKernel::Cudnn, p), flops / (400e12 * 0.6), 1e-12);
  EXPECT_NEAR(fwd(sc::AttentionKernel::Flash2, p), flops / (400e12 * 0.5), 1e-12);
}

TEST(OpCost, ElementwiseOpsAreMemoryBoundAndSplitOnlyWithSequenceParallel) {
  sc::OpCost oc(sc::testing::toy_device());
  sm::Op norm;
  norm.kind = sm::OpKind::Norm;
  norm.sharding = sm::Sharding::Replicated;
  norm.bytes_fwd = 4.0e8;
  const double bw = 2000e9 * 0.9;
  EXPECT_NEAR(oc.time(norm, 8, false, DType::Bf16).fwd_s, 4.0e8 / bw, 1e-15);
  EXPECT_NEAR(oc.time(norm, 8, true, DType::Bf16).fwd_s, 4.0e8 / 8 / bw, 1e-15);
  EXPECT_NEAR(oc.time(norm, 8, true, DType::Bf16).bwd_s, 2 * 4.0e8 / 8 / bw, 1e-15);
  // fp32 moves twice the bytes.
  EXPECT_NEAR(oc.time(norm, 1, false, DType::Fp32).fwd_s, 8.0e8 / bw, 1e-15);
  // Vocab-parallel loss works on V / tp logits; the embedding lookup is not split.
  sm::Op loss = norm;
  loss.kind = sm::OpKind::Loss;
  loss.sharding = sm::Sharding::VocabParallel;
  EXPECT_NEAR(oc.time(loss, 4, false, DType::Bf16).fwd_s, 4.0e8 / 4 / bw, 1e-15);
  sm::Op emb = norm;
  emb.kind = sm::OpKind::Embedding;
  emb.sharding = sm::Sharding::VocabParallel;
  EXPECT_NEAR(oc.time(emb, 4, true, DType::Bf16).fwd_s, 4.0e8 / bw, 1e-15);
  EXPECT_THROW(oc.time(norm, 0, false, DType::Bf16), strata::InputError);
}

TEST(OpCost, Fp8GemmRunsAtTheFp8RateAndPaysItsCastPasses) {
  auto p = sc::testing::toy_device();  // bf16 400 TF, 2000 GB/s at 0.9, gemm efficiency 0.8
  p.peak_tflops[DType::Fp8] = 800;
  sc::OpCost oc(p);
  const double m = 8192, h = 12288;
  // Row-parallel MLP down on tp 4: GEMM (m, h, 4h/4 = h). Compute bound by hand:
  // 2 m h h FLOPs at 800 TF x 0.8 (the bf16 cap, 400 x 0.8 / 2, gives the same).
  auto down = gemm_op(sm::OpKind::MlpDown, sm::Sharding::RowParallel, 8192, 12288, 4 * 12288);
  const double gemm = 2 * m * h * h / (800e12 * 0.8);
  const double bw = 2000e9 * 0.9;
  // Casts: forward X (m x k = m x h), backward dY (m x n = m x h), 4 bytes per element.
  const double cast = 4 * m * h / bw;
  auto t = oc.time(down, 4, false, DType::Fp8);
  EXPECT_NEAR(t.fwd_s, gemm + cast, 1e-12);
  EXPECT_NEAR(t.bwd_s, 2 * gemm + cast, 1e-12);
  // The bf16 GEMM takes twice as long on this device (400 vs 800 TF) and casts nothing.
  EXPECT_NEAR(oc.time(down, 4, false, DType::Bf16).fwd_s, 2 * gemm, 1e-12);
  // Each cast kernel also pays the per-kernel overhead.
  sc::OpCostOptions o;
  o.kernel_overhead_s = 5e-6;
  sc::OpCost with_overhead(p, o);
  EXPECT_NEAR(with_overhead.time(down, 4, false, DType::Fp8).fwd_s, gemm + cast + 5e-6, 1e-12);
}

TEST(OpCost, Fp8OnADeviceWithoutAnFp8PeakIsRefused) {
  sc::OpCost oc(sc::testing::toy_device());  // bf16 and fp32 only, no table
  auto qkv = gemm_op(sm::OpKind::Qkv, sm::Sharding::ColumnParallel, 1024, 3072, 1024);
  EXPECT_THROW(oc.time(qkv, 1, false, DType::Fp8), strata::InputError);
}

TEST(OpCost, LossChargesMegatronsCrossEntropyPassesOverTheVocabParallelLogits) {
  const auto p = sc::testing::toy_device();  // 2000 GB/s at 90%
  const double bw = 2000e9 * 0.9;
  sm::Op loss;
  loss.kind = sm::OpKind::Loss;
  loss.sharding = sm::Sharding::VocabParallel;
  loss.logits = 4096.0 * 131072;  // one 4096-token micro-batch, vocabulary 131072
  loss.bytes_fwd = 4 * loss.logits;
  sc::OpCostOptions o;
  o.kernel_overhead_s = 2e-6;
  // Unfused, bf16 logits (by hand from cross_entropy.py): forward upcast 2+4, max 4,
  // subtract 4+4, exp 4+4, sum 4, divide 4+4 = 38 B in 6 kernels; backward scale 4+4 and
  // the cast back 4+2 = 14 B in 2 kernels. tp 4: a quarter of the logits.
  const double e = loss.logits / 4;
  auto t = sc::OpCost(p, o).time(loss, 4, false, DType::Bf16);
  EXPECT_NEAR(t.fwd_s, 38 * e / bw + 6 * 2e-6, 1e-12);
  EXPECT_NEAR(t.bwd_s, 14 * e / bw + 2 * 2e-6, 1e-12);
  // Fused (fused_cross_entropy.py): [upcast + max] 2+4, [subtract + exp] 4+4, sum 4,
  // divide 4+4 = 26 B in 4 kernels; the backward is unchanged.
  o.fused_cross_entropy = true;
  t = sc::OpCost(p, o).time(loss, 4, false, DType::Bf16);
  EXPECT_NEAR(t.fwd_s, 26 * e / bw + 4 * 2e-6, 1e-12);
  EXPECT_NEAR(t.bwd_s, 14 * e / bw + 2 * 2e-6, 1e-12);
  // fp32 logits (CPU runtime): no casts. Unfused forward 32 B in 5 kernels, backward 8 B in 1.
  o.fused_cross_entropy = false;
  t = sc::OpCost(p, o).time(loss, 1, false, DType::Fp32);
  EXPECT_NEAR(t.fwd_s, 32 * loss.logits / bw + 5 * 2e-6, 1e-12);
  EXPECT_NEAR(t.bwd_s, 8 * loss.logits / bw + 1 * 2e-6, 1e-12);
}

// The eager compositions of TorchTitan's Llama (costmodel/eager_elementwise.h), by hand: a
// composed fp32 RMSNorm moves 36 B per element forward and 72 B backward against the fused
// kernel's 4 and 8; the complex-multiply RoPE 20 B each way against 4 and 8; an unfused
// LayerNorm is PyTorch's native kernel, as fused. No per-kernel time on the toy device.
TEST(OpCost, EagerNormAndRopeMoveTheBytesOfTheirTensorOps) {
  const auto p = sc::testing::toy_device();
  const double bw = 2000e9 * 0.9, elements = 1.0e8;
  sc::OpCostOptions eager;
  eager.fused_layernorm = false;
  eager.fused_rope = false;
  eager.rms_norm = true;
  sm::Op norm;
  norm.kind = sm::OpKind::Norm;
  norm.sharding = sm::Sharding::Replicated;
  norm.bytes_fwd = 4 * elements;
  norm.bytes_bwd = 8 * elements;
  const sc::OpTime t = sc::OpCost(p, eager).time(norm, 1, false, DType::Bf16);
  EXPECT_NEAR(t.fwd_s, 36 * elements / bw, 1e-12);
  EXPECT_NEAR(t.bwd_s, 72 * elements / bw, 1e-12);
  sc::OpCostOptions native = eager;
  native.rms_norm = false;  // LayerNorm: torch.nn.LayerNorm's own kernel
  EXPECT_NEAR(sc::OpCost(p, native).time(norm, 1, false, DType::Bf16).fwd_s, 4 * elements / bw, 1e-12);
  sm::Op rope = norm;
  rope.kind = sm::OpKind::Rope;
  rope.sharding = sm::Sharding::HeadParallel;
  const sc::OpTime r = sc::OpCost(p, eager).time(rope, 2, false, DType::Bf16);
  EXPECT_NEAR(r.fwd_s, 20 * elements / 2 / bw, 1e-12);
  EXPECT_NEAR(r.bwd_s, 20 * elements / 2 / bw, 1e-12);
  EXPECT_NEAR(sc::OpCost(p).time(rope, 2, false, DType::Bf16).fwd_s, 4 * elements / 2 / bw, 1e-12);
}

// Attention written with tensor ops copies around the kernel: GQA's repeated K and V (read
// the kv heads, write all heads, each of K and V) and the contiguous output (read + write).
// Llama 3 8B widths, one micro-batch of 2 x 8192 tokens on tp 1, by hand.
TEST(OpCost, AttentionLayoutCopiesAreChargedBesideTheKernel) {
  const auto p = sc::testing::toy_device();
  sm::Op att;
  att.kind = sm::OpKind::AttentionCore;
  att.sharding = sm::Sharding::HeadParallel;
  att.attention = {2, 32, 8, 8192, 128};
  att.flops_fwd = 4.0 * 2 * 8192.0 * 8192.0 * 4096;
  sc::OpCostOptions copies;
  copies.attention_layout_copies = true;
  const double tokens = 2 * 8192.0, bw = 2000e9 * 0.9;
  const double bytes = 2 * 2 * tokens * 4096 + 2 * 2 * tokens * (4096 + 1024);
  const sc::OpTime with = sc::OpCost(p, copies).time(att, 1, false, DType::Bf16);
  const sc::OpTime without = sc::OpCost(p).time(att, 1, false, DType::Bf16);
  EXPECT_NEAR(with.fwd_s - without.fwd_s, bytes / bw, 1e-12);
  EXPECT_NEAR(with.bwd_s - without.bwd_s, bytes / bw, 1e-12);
  // Without GQA only the output copy remains.
  att.attention.kv_heads = 32;
  EXPECT_NEAR(sc::OpCost(p, copies).time(att, 1, false, DType::Bf16).fwd_s -
                  sc::OpCost(p).time(att, 1, false, DType::Bf16).fwd_s,
              2 * 2 * tokens * 4096 / bw, 1e-12);
}
