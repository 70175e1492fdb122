// The software stack: catalog parsing and sources, and the cost terms it switches on,
// each against a closed form computed by hand on the toy device (400 TFLOP/s bf16 at
// 80% GEMM efficiency, 2000 GB/s at 90%).
#include <gtest/gtest.h>

#include <algorithm>

#include "common/errors.h"
#include "costmodel/memory_model.h"
#include "costmodel/op_cost.h"
#include "costmodel/prediction_band.h"
#include "costmodel/software_stack.h"
#include "test_profiles.h"

namespace sc = strata::costmodel;
namespace sm = strata::models;
using sc::DType;

namespace {

sm::Op attention_op(double b, double heads, double s, double d) {
  sm::Op att;
  att.kind = sm::OpKind::AttentionCore;
  att.sharding = sm::Sharding::HeadParallel;
  att.attention = {static_cast<std::int64_t>(b), static_cast<std::int64_t>(heads),
                   static_cast<std::int64_t>(heads), static_cast<std::int64_t>(s),
                   static_cast<std::int64_t>(d)};
  att.flops_fwd = 4 * b * s * s * heads * d;
  att.flops_bwd = 2 * att.flops_fwd;
  return att;
}

}  // namespace

TEST(SoftwareStack, EveryCatalogStackParsesAndCitesEverySetting) {
  const auto names = sc::software_stack_catalog_names();
  for (const char* want : {"bigscience-2022-bf16", "deepspeed-2021-zero3", "deepspeed-2022-zero3", "llm-foundry-2023", "llm-foundry-2024", "megatron-2021", "megatron-2022", "mcore-2024", "mcore-2024-deepep", "mcore-2024-zoo", "nemo-2024",
                           "nemo-2024-perf", "nemo-2024-perf-deepep", "strata-cpu", "torchtitan-2024",
                           "torchtitan-2024-compile"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (const auto& n : names) {
    const sc::SoftwareStack s = sc::load_software_stack(n);
    EXPECT_EQ(s.name, n);
    for (const char* key : {"precision", "attention.kernel", "overlap.grad_reduce", "overlap.p2p"})
      EXPECT_TRUE(s.sources.count(key)) << n << " has no source for " << key;
  }
}

TEST(SoftwareStack, CatalogFactsThatThePredictionsRestOn) {
  const auto m21 = sc::load_software_stack("megatron-2021");
  EXPECT_EQ(m21.attention, sc::AttentionKernel::Unfused);
  EXPECT_EQ(m21.precision, DType::Fp16);
  EXPECT_EQ(m21.p2p, sc::P2pMode::Blocking);
  EXPECT_FALSE(m21.overlap_grad_reduce);
  const auto mc = sc::load_software_stack("mcore-2024");
  EXPECT_TRUE(mc.flash_like());
  EXPECT_TRUE(mc.overlap_tp_comm);
  EXPECT_EQ(mc.p2p, sc::P2pMode::AsyncInterleaved);
  EXPECT_EQ(sc::default_software_stack_name(sc::testing::toy_device()), "nemo-2024");
}

// TorchTitan (FSDP2): bf16 gathers, fp32 reduce-scatters, SDPA flash, K/V all-gathered under
// context parallelism, gradients clipped (norm read + scale) but never zero-filled, no TP
// overlap; the compile variant differs only in the fused elementwise kernels.
TEST(SoftwareStack, TorchTitanStacksDescribeFsdp2) {
  const auto eager = sc::load_software_stack("torchtitan-2024");
  const auto comp = sc::load_software_stack("torchtitan-2024-compile");
  for (const auto* s : {&eager, &comp}) {
    EXPECT_EQ(s->precision, DType::Bf16);
    EXPECT_EQ(s->grad_reduce_dtype, DType::Fp32);
    EXPECT_EQ(s->attention, sc::AttentionKernel::Flash2);
    EXPECT_EQ(s->attention_dropout, 0.0);
    EXPECT_EQ(s->cp_comm, sc::CpCommType::AllGather);
    EXPECT_TRUE(s->zero_prefetch);
    EXPECT_TRUE(s->overlap_grad_reduce);
    EXPECT_FALSE(s->overlap_param_gather);
    EXPECT_FALSE(s->overlap_tp_comm);
    EXPECT_FALSE(s->grad_buffer_zero);
    EXPECT_TRUE(s->grad_buffer_nan_check);
    EXPECT_TRUE(s->grad_buffer_scale);
    EXPECT_FALSE(s->supports.experts);
    EXPECT_EQ(s->supports.max_zero, 3);
    EXPECT_FALSE(s->fused_cross_entropy);
    EXPECT_EQ(sc::grad_bucket_params(*s, 64), 25'000'000.0);
    // Every key the files set has its source, and so has kernel_overhead_us's absence.
    for (const char* key : {"precision", "grad_reduce_dtype", "attention.kernel", "attention.softmax_fused",
                            "attention.dropout", "fusions.bias_gelu", "fusions.bias_dropout_add", "fusions.layernorm",
                            "fusions.grad_accumulation", "fusions.cross_entropy", "overlap.tp_comm",
                            "overlap.tp_comm_sms", "overlap.tp_backward", "overlap.grad_reduce", "overlap.param_gather",
                            "overlap.p2p", "cp_comm_type", "grad_bucket_params", "optimizer", "distributed_optimizer",
                            "zero_prefetch", "grad_buffer", "fp8_params", "moe_dispatcher", "supports",
                            "kernel_overhead_us"})
      EXPECT_TRUE(s->sources.count(key)) << s->name << " has no source for " << key;
  }
  EXPECT_FALSE(eager.fused_layernorm);
  EXPECT_FALSE(eager.fused_bias_gelu);
  EXPECT_TRUE(comp.fused_layernorm);
  EXPECT_TRUE(comp.fused_bias_gelu);
}

TEST(SoftwareStack, BadStacksAreRefusedByName) {
  const std::string ok =
      "name: x\nprecision: bf16\nattention: {kernel: flash2}\n"
      "overlap: {tp_comm: false, grad_reduce: true, param_gather: false, p2p: async}\n";
  EXPECT_NO_THROW(sc::parse_software_stack(ok, "t.yaml"));
  auto fails = [](const std::string& text, const std::string& needle) {
    try {
      sc::parse_software_stack(text, "t.yaml");
    } catch (const strata::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "accepted: " << text;
  };
  std::string bad = ok;
  fails(bad.replace(bad.find("flash2"), 6, "flash9"), "kernel");
  fails(ok + "typo_key: 1\n", "typo_key");
  fails(std::string(ok).replace(ok.find("param_gather: false"), 19, "param_gather: true"),
        "distributed_optimizer");
  // ZeRO-3 gather settings: module-only knobs without zero3_gather: module, values out of range.
  fails(ok + "zero3_persist_params: 100000\n", "zero3_gather");
  fails(ok + "zero3_gather: module\nzero3_gather_bucket_params: -1\n", "zero3_gather_bucket_params");
  fails(ok + "zero3_gather: layer\n", "zero3_gather");
  // The reduction's own dtype and ZeRO-1 collective: known values only.
  fails(ok + "grad_comm_dtype: int8\n", "grad_comm_dtype");
  fails(ok + "zero1_grad_collective: broadcast\n", "zero1_grad_collective");
  fails(ok + "zero3_gather: module\nzero3_fetch_host_us: 1e9\n", "zero3_fetch_host_us");
  fails(ok + "supports: {zero_with_pp: 4}\n", "zero_with_pp");
  EXPECT_EQ(sc::parse_software_stack(ok + "zero3_gather: module\nzero3_persist_params: 1e5\n", "t.yaml").zero3_persist_params,
            1e5);
  EXPECT_THROW(sc::load_software_stack("megatron-2020"), strata::InputError);
}

TEST(SoftwareStack, UnfusedAttentionIsBatchedGemmsPlusScorePasses) {
  sc::OpCostOptions o;
  o.attention = sc::AttentionKernel::Unfused;
  o.attention_dropout = 0.1;
  const sc::OpCost oc(sc::testing::toy_device(), o);
  const double b = 2, heads = 16, s = 1024, d = 64, tp = 2;
  const auto t = oc.time(attention_op(b, heads, s, d), static_cast<int>(tp), false, DType::Bf16);
  // Per rank: B = b * heads / tp = 16 (sequence, head) pairs.
  const double B = 16, flops_rate = 400e12 * 0.8, bw = 2000e9 * 0.9;
  // QK^T (s, s, d) per pair: 2 s s d FLOPs, operands s d + d s + s s (bf16).
  const double qk = std::max(B * 2 * s * s * d / flops_rate, B * (2 * s * d + s * s) * 2 / bw);
  // PV (s, d, s): the same FLOPs, operands s s + s d + s d.
  const double pv = std::max(B * 2 * s * s * d / flops_rate, B * (s * s + 2 * s * d) * 2 / bw);
  const double scores = B * s * s;
  const double fwd = qk + pv + (4 * scores + 5 * scores + 4 * B * s * d) / bw;
  const double bwd = qk + 3 * pv + (6 * scores + 5 * scores + 4 * B * s * d) / bw;
  EXPECT_NEAR(t.fwd_s, fwd, 1e-12 * fwd);
  EXPECT_NEAR(t.bwd_s, bwd, 1e-12 * bwd);
  // The flash kernel on the same op computes half the scores at the attention efficiency.
  const sc::OpCost flash(sc::testing::toy_device());
  const double flash_fwd = 0.5 * 4 * b * s * s * heads * d / tp / (400e12 * 0.5);
  EXPECT_NEAR(flash.time(attention_op(b, heads, s, d), 2, false, DType::Bf16).fwd_s, flash_fwd,
              1e-12 * flash_fwd);
}

TEST(SoftwareStack, KernelOverheadIsPaidPerNonGemmKernel) {
  sc::OpCostOptions o;
  o.kernel_overhead_s = 5e-6;
  const sc::OpCost with(sc::testing::toy_device(), o), without(sc::testing::toy_device());
  sm::Op norm;
  norm.kind = sm::OpKind::Norm;
  norm.bytes_fwd = 1e6;
  const auto a = with.time(norm, 1, false, DType::Bf16), b = without.time(norm, 1, false, DType::Bf16);
  EXPECT_NEAR(a.fwd_s - b.fwd_s, 1 * 5e-6, 1e-15);  // fused LayerNorm: 1 forward kernel
  EXPECT_NEAR(a.bwd_s - b.bwd_s, 2 * 5e-6, 1e-15);  // dx and dgamma/dbeta
  // A 1 MB pass reaches 1e6 / (1e6 / 1.8e12 + 5e-6) = ~10% of the achieved bandwidth.
  EXPECT_LT(1e6 / a.fwd_s, 0.2 * 1.8e12);
}

TEST(SoftwareStack, MemoryFollowsTheAttentionKernel) {
  sm::ModelSpec m;
  m.seq_len = 2048, m.hidden = 4096, m.heads = 32, m.kv_heads = 32, m.ffn = 16384, m.layers = 2;
  const double unfused = sc::layer_activation_bytes(m, 1, 1, false, sc::RecomputeMode::None);
  const double flash = sc::layer_activation_bytes(m, 1, 1, false, sc::RecomputeMode::None,
                                                  sc::kFlashScoreBytes);
  const double no_dropout = sc::layer_activation_bytes(m, 1, 1, false, sc::RecomputeMode::None,
                                                       sc::kUnfusedNoDropoutScoreBytes);
  const double a = 32, s = 2048;
  EXPECT_DOUBLE_EQ(unfused - flash, 5 * a * s * s);     // Korthikanti's 5as^2b, b = 1
  EXPECT_DOUBLE_EQ(no_dropout - flash, 2 * a * s * s);  // softmax output only
  // Flash keeps exactly what selective recompute keeps.
  EXPECT_DOUBLE_EQ(flash, sc::layer_activation_bytes(m, 1, 1, false, sc::RecomputeMode::Selective));
}

TEST(SoftwareStack, BandComesFromTheCommittedResidualsAndWarnsOutsideTheirRange) {
  const auto in = sc::prediction_band("megatron-2021", "a100-sxm-80gb", 145.6, 1536, 2048);
  ASSERT_TRUE(in.relative.has_value());
  EXPECT_GT(*in.relative, 0);
  EXPECT_TRUE(in.warnings.empty());
  const auto out = sc::prediction_band("megatron-2021", "a100-sxm-80gb", 145.6, 16, 8192);
  EXPECT_EQ(out.warnings.size(), 2u);  // GPU count and sequence length
  // The band covers every validation row: published / predicted = 1 / (1 + error) for the
  // rows' most negative and most positive errors, and the prediction itself.
  for (const auto& v : sc::validation_residuals()) {
    const auto b = sc::prediction_band(v.stack, v.device, v.params_b_min, v.gpus_min, v.seq_min, v.fitted, v.moe);
    ASSERT_TRUE(b.relative.has_value()) << v.stack;
    for (double e : {v.err_min, v.err_max}) {
      EXPECT_LE(b.low, 1 / (1 + e) + 1e-12) << v.stack;
      EXPECT_GE(b.high, 1 / (1 + e) - 1e-12) << v.stack;
    }
    EXPECT_LE(b.low, 1.0);
    EXPECT_GE(b.high, 1.0);
  }
  const auto none = sc::prediction_band("nemo-2024", "toy", 1, 8, 2048);
  EXPECT_FALSE(none.relative.has_value());
  EXPECT_EQ(none.warnings.size(), 1u);
}

// A mixture-of-experts prediction takes its band from the MoE rows only (models: moe), a dense
// one from the dense rows only: the MoE rows' misses (the all-to-all, expert GEMMs, routing)
// never narrow or widen a dense band. A stack validated on dense rows only gives an MoE
// prediction no band and says so.
TEST(SoftwareStack, MoePredictionsTakeTheirBandFromMoeRows) {
  double moe_lo = 0, dense_lo = 0, moe_worst = 0;
  int moe_sets = 0, dense_sets = 0;
  std::string moe_worst_set;
  for (const auto& v : sc::validation_residuals()) {
    if (v.stack != "nemo-2024-perf" || v.device != "h100-sxm-80gb" || !v.fitted) continue;
    (v.moe ? moe_lo : dense_lo) = std::min(v.moe ? moe_lo : dense_lo, v.err_min);
    ++(v.moe ? moe_sets : dense_sets);
    if (v.moe && v.max_abs > moe_worst) moe_worst = v.max_abs, moe_worst_set = v.set;
  }
  ASSERT_GT(moe_sets, 0);
  ASSERT_GT(dense_sets, 0);
  const auto moe = sc::prediction_band("nemo-2024-perf", "h100-sxm-80gb", 300, 512, 4096, true, true);
  const auto dense = sc::prediction_band("nemo-2024-perf", "h100-sxm-80gb", 300, 512, 4096, true, false);
  ASSERT_TRUE(moe.relative && dense.relative);
  EXPECT_DOUBLE_EQ(moe.high, 1 / (1 + moe_lo));
  EXPECT_DOUBLE_EQ(dense.high, 1 / (1 + dense_lo));
  EXPECT_NE(moe.basis, dense.basis);
  EXPECT_NE(moe.basis.find("moe-h100.yaml"), std::string::npos) << moe.basis;
  EXPECT_EQ(dense.basis.find("moe-h100.yaml"), std::string::npos) << dense.basis;
  // The basis names the set that holds the largest miss, after it.
  EXPECT_NE(moe.basis.find("% (" + moe_worst_set + "), mean"), std::string::npos) << moe.basis;
  const auto unvalidated = sc::prediction_band("megatron-2021", "a100-sxm-80gb", 40, 512, 2048, true, true);
  EXPECT_FALSE(unvalidated.relative.has_value());
  ASSERT_EQ(unvalidated.warnings.size(), 1u);
  EXPECT_NE(unvalidated.warnings[0].find("mixture-of-experts"), std::string::npos) << unvalidated.warnings[0];
}
