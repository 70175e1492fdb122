// The fit step (calibration/fit_runs.h) and the runs file (calibration/measured_runs.h):
// parameters recovered from runs strata synthesises with known losses, and every kind of
// bad input refused with one clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "calibration/fit_runs.h"
#include "calibration/measured_runs.h"
#include "common/errors.h"
#include "costmodel/device_profile.h"
#include "models/model_stats.h"
#include "tests/calibration/plan_file.h"
#include "tests/input_error_of.h"

namespace {

namespace cal = strata::calibration;
using strata::InputError;
using strata::costmodel::TrainingLosses;

// Layouts of llama3-8b on DGX H100 nodes: TP inside a node, DP across nodes, pipelines.
std::string synthetic_runs_yaml() {
  struct L { int tp, pp, dp, mbs, gbs, vpp; };
  const std::vector<L> layouts = {{1, 1, 8, 1, 64, 1},   {2, 1, 4, 1, 64, 1},   {4, 1, 2, 1, 64, 1},
                                  {8, 1, 1, 1, 64, 1},   {1, 1, 16, 1, 128, 1}, {2, 1, 16, 1, 128, 1},
                                  {4, 1, 16, 2, 256, 1}, {8, 1, 16, 1, 256, 1}, {1, 2, 8, 1, 128, 1},
                                  {2, 2, 8, 1, 128, 2},  {4, 2, 8, 1, 256, 1},  {8, 2, 4, 1, 128, 2},
                                  {1, 4, 4, 1, 64, 1},   {2, 4, 8, 1, 256, 2},  {8, 4, 8, 1, 512, 1},
                                  {4, 4, 16, 1, 512, 2}, {1, 1, 64, 1, 512, 1}, {2, 1, 64, 1, 1024, 1},
                                  {8, 1, 64, 1, 1024, 1}, {4, 2, 32, 1, 1024, 1}};
  std::string y = "source: synthetic\ndefaults: {cluster: dgx-h100, stack: mcore-2024}\nruns:\n";
  int i = 0;
  for (const L& l : layouts)
    y += fmt::format("  - {{id: r{}, model: llama3-8b, strategy: {{tp: {}, pp: {}, dp: {}, vpp: {}, micro_batch: {}, "
                     "global_batch: {}, zero: 1, sequence_parallel: {}, recompute: selective}}, "
                     "measured: {{iteration_s: 1}}}}\n",
                     i++, l.tp, l.pp, l.dp, l.vpp, l.mbs, l.gbs, l.tp > 1 ? "true" : "false");
  return y;
}

// Runs strata predicts with known losses `truth`, times a 0.5% log-normal scatter, fitted back
// with a row sigma to match (no cross-validation).
cal::FitResult fit_synthesised(std::vector<cal::MeasuredRun> runs, const TrainingLosses& truth, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.005);
  for (auto& r : runs) r.measured_s = cal::predict_run_s(r, truth) * std::exp(noise(rng));
  cal::FitOptions o;
  o.row_sigma = 0.01;
  o.cross_validate = false;
  return cal::fit_training_losses(runs, o);
}

TrainingLosses losses_of(const std::array<double, strata::costmodel::kLossParameters>& values) {
  TrainingLosses t;
  t.present = true;
  t.value = values;
  return t;
}

TEST(FitRuns, RecoversKnownParametersFromSynthesisedRuns) {
  // gemm_sustain 0.87, host gap 3 us, jitter 1.2%
  const cal::FitResult f = fit_synthesised(cal::parse_measured_runs(synthetic_runs_yaml(), "synthetic.yaml"),
                                           losses_of({0.87, 1.0, 3.0, 1.0, 2.5, 0.012, 1.0, 0.0}), 7);
  // Tolerance: 2 standard errors, and never looser than the stated absolute bounds.
  EXPECT_EQ(f.losses.status[0], "fitted");
  EXPECT_NEAR(f.losses.value[0], 0.87, std::max(0.015, 2 * f.losses.std_error[0]));
  EXPECT_GT(f.losses.std_error[0], 0);
  EXPECT_LT(f.fitted.mape, 0.015) << cal::fit_report(f);
  // Before the fit (no losses) every row was predicted fast by 13% or more.
  EXPECT_LT(f.neutral.bias, -0.10);
}

// memory_sustain is told apart from gemm_sustain by rows whose memory-bound share differs:
// unfused attention (softmax and dropout over s x s scores per head) weighs more in small
// models. On flash-attention rows alone (above) the two trade off.
TEST(FitRuns, RecoversMemorySustainWhereTheMemoryBoundShareVaries) {
  std::string y = "source: synthetic\ndefaults: {cluster: dgx-a100, stack: megatron-2021-torch-ddp}\nruns:\n";
  int i = 0;
  for (const char* model : {"megatron-1.7b", "megatron-3.6b", "megatron-7.5b", "megatron-18.4b"})
    for (int mbs : {1, 4})
      for (int tp : {1, 2, 8})
        y += fmt::format("  - {{id: r{}, model: {}, strategy: {{tp: {}, pp: 1, dp: 8, micro_batch: {}, "
                         "global_batch: 64, recompute: full}}, measured: {{iteration_s: 1}}}}\n",
                         i++, model, tp, mbs);
  const cal::FitResult f = fit_synthesised(cal::parse_measured_runs(y, "synthetic.yaml"),
                                           losses_of({0.87, 1.0, 1.0, 1.0, 2.5, 0.0075, 0.8, 0.0}), 11);
  const auto mem = static_cast<std::size_t>(strata::costmodel::loss_parameter_index("memory_sustain"));
  ASSERT_EQ(f.losses.status[mem], "fitted") << cal::fit_report(f);
  EXPECT_NEAR(f.losses.value[mem], 0.8, std::max(0.03, 2 * f.losses.std_error[mem])) << cal::fit_report(f);
  EXPECT_NEAR(f.losses.value[0], 0.87, std::max(0.015, 2 * f.losses.std_error[0])) << cal::fit_report(f);
}

// moe_host_ms is told apart by MoE rows whose layers are thin enough for the host to bound
// them (more tp, fewer tokens per micro-batch) beside rows whose layers are not.
TEST(FitRuns, RecoversTheMoeHostTimeFromHostBoundAndComputeBoundLayouts) {
  std::string y = "source: synthetic\ndefaults: {cluster: dgx-h100, stack: mcore-2024-deepep}\nruns:\n";
  int i = 0;
  for (int tp : {1, 2, 4})
    for (int mbs : {1, 2, 4})
      for (int dp : {8, 16})
        y += fmt::format("  - {{id: r{}, model: qwen3-moe-30b-a3b, strategy: {{tp: {}, pp: 1, dp: {}, ep: 8, "
                         "micro_batch: {}, global_batch: {}, zero: 1, sequence_parallel: {}, recompute: selective}}, "
                         "measured: {{iteration_s: 1}}}}\n",
                         i++, tp, dp, mbs, 8 * dp * mbs, tp > 1 ? "true" : "false");
  // 2 ms of host time per MoE layer forward
  const cal::FitResult f = fit_synthesised(cal::parse_measured_runs(y, "synthetic.yaml"),
                                           losses_of({0.87, 1.0, 1.0, 1.0, 2.5, 0.0075, 1.0, 2.0}), 5);
  const auto host = static_cast<std::size_t>(strata::costmodel::loss_parameter_index("moe_host_ms"));
  ASSERT_EQ(f.losses.status[host], "fitted") << cal::fit_report(f);
  EXPECT_NEAR(f.losses.value[host], 2.0, std::max(0.3, 2 * f.losses.std_error[host])) << cal::fit_report(f);
  EXPECT_LT(f.fitted.mape, 0.015) << cal::fit_report(f);
}

TEST(FitRuns, TooFewRowsAndMixedDevicesAreRefused) {
  auto runs = cal::parse_measured_runs(synthetic_runs_yaml(), "synthetic.yaml");
  runs.resize(2);
  try {
    cal::fit_training_losses(runs);
    FAIL() << "two rows were fitted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("at least 3 runs"), std::string::npos) << e.what();
  }
  auto mixed = cal::parse_measured_runs(synthetic_runs_yaml(), "synthetic.yaml");
  mixed[0] = cal::parse_measured_runs(
      "runs: [{model: gpt3-175b, cluster: dgx-a100, source: x, strategy: {tp: 8, pp: 8, dp: 16, micro_batch: 1, "
      "global_batch: 1536}, measured: {iteration_s: 30}}]",
      "a100.yaml")[0];
  EXPECT_THROW(cal::fit_training_losses(mixed), InputError);
  cal::FitOptions o;
  o.freeze = {"gemm_speed"};
  EXPECT_THROW(cal::fit_training_losses(cal::parse_measured_runs(synthetic_runs_yaml(), "s.yaml"), o), InputError);
}

TEST(FitRuns, FewRowsFitFewParametersAndSayWhich) {
  auto runs = cal::parse_measured_runs(synthetic_runs_yaml(), "synthetic.yaml");
  runs.resize(6);  // 6 rows at 5 rows per parameter: one parameter
  for (auto& r : runs) r.measured_s = cal::predict_run_s(r, TrainingLosses{}) * 1.15;
  cal::FitOptions o;
  o.cross_validate = false;
  const auto f = cal::fit_training_losses(runs, o);
  int fitted = 0;
  for (const auto& s : f.losses.status) fitted += (s == "fitted" || s == "at_bound") ? 1 : 0;
  EXPECT_EQ(fitted, 1) << cal::fit_report(f);
  bool said = false;
  for (const auto& n : f.notes) said |= n.find("fit at most 1 parameter") != std::string::npos;
  EXPECT_TRUE(said) << cal::fit_report(f);
}

TEST(FitRuns, LeaveOneSourceOutPredictsEachSourceWithoutIt) {
  auto runs = cal::parse_measured_runs(synthetic_runs_yaml(), "synthetic.yaml");
  TrainingLosses truth;
  truth.present = true;
  truth.value = {0.9, 1.0, 1.0, 1.0, 2.5, 0.0075, 1.0};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    runs[i].measured_s = cal::predict_run_s(runs[i], truth);
    runs[i].source = i % 2 ? "odd" : "even";
  }
  const auto f = cal::fit_training_losses(runs);
  ASSERT_EQ(f.held_out.size(), 2u);
  for (const auto& c : f.held_out) {
    EXPECT_EQ(c.error.rows, 10);
    EXPECT_LT(c.error.mape, 0.02) << c.source;
  }
  for (const auto& r : f.rows) EXPECT_GT(r.held_out_s, 0) << r.id;
  EXPECT_NE(cal::residual_entries(f).find("profile: fitted"), std::string::npos);
}

// Residual entries hold out-of-sample predictions only: a fitted row as the fit without its
// source predicts it, an MoE check row (never fitted) as the fit predicts it, marked
// `models: moe`; a dense check row makes none (dense bands come from held-out dev sources).
TEST(FitRuns, ResidualEntriesTakeMoeCheckRowsAndMarkThem) {
  cal::FitResult f;
  const auto row = [](const char* id, bool fit, bool moe, double fitted, double held_out) {
    cal::RowFit r;
    r.id = id, r.source = std::string("src-") + id, r.stack = "s", r.device = "d";
    r.fit = fit, r.moe = moe, r.measured_s = 10, r.fitted_s = fitted, r.held_out_s = held_out;
    r.params_b = 1, r.gpus = 8, r.seq = 4096;
    return r;
  };
  f.rows = {row("dense-fit", true, false, 9.9, 9.0), row("dense-check", false, false, 8.0, 0),
            row("moe-check", false, true, 8.0, 0), row("moe-fit", true, true, 9.9, 11.0)};
  const std::string e = cal::residual_entries(f);
  EXPECT_NE(e.find("src-dense-fit, held out of the fitted profile\", rows: 1, mape: 0.100"), std::string::npos) << e;
  EXPECT_EQ(e.find("src-dense-check"), std::string::npos) << e;
  EXPECT_NE(e.find("src-moe-check, held out of the fitted profile\", rows: 1, mape: 0.200, max_abs: 0.200, bias: -0.200"),
            std::string::npos) << e;
  EXPECT_NE(e.find("bias: 0.100, err: [0.100, 0.100]"), std::string::npos) << e;  // moe-fit, held out
  std::size_t moe_marks = 0;
  for (std::size_t at = e.find("models: moe"); at != std::string::npos; at = e.find("models: moe", at + 1)) ++moe_marks;
  EXPECT_EQ(moe_marks, 2u) << e;
}

TEST(FitRuns, FittedProfileRoundTripsAndCarriesTheFit) {
  auto runs = cal::parse_measured_runs(synthetic_runs_yaml(), "synthetic.yaml");
  for (auto& r : runs) r.measured_s = cal::predict_run_s(r, TrainingLosses{}) * 1.12;
  cal::FitOptions o;
  o.cross_validate = false;
  const auto f = cal::fit_training_losses(runs, o);
  const std::string yaml = cal::fitted_profile_yaml(f, runs.front().cluster.device, "synthetic.yaml");
  const auto p = strata::costmodel::parse_device_profile(yaml, "fitted.yaml");
  ASSERT_TRUE(p.training_losses.present);
  for (std::size_t j = 0; j < p.training_losses.value.size(); ++j) {
    EXPECT_NEAR(p.training_losses.value[j], f.losses.value[j], 1e-6 * (1 + std::fabs(f.losses.value[j])));
    EXPECT_EQ(p.training_losses.status[j], f.losses.status[j]);
  }
  EXPECT_NE(p.training_losses.record_yaml.find("synthetic.yaml"), std::string::npos);
  EXPECT_NE(p.training_losses.record_yaml.find("residual_pct"), std::string::npos);
  // Written again, it is the same text: the record is kept verbatim.
  EXPECT_EQ(strata::costmodel::to_yaml(p), strata::costmodel::to_yaml(
                                                strata::costmodel::parse_device_profile(strata::costmodel::to_yaml(p), "again")));
  // The fitted losses change predictions: 12% slower rows are met within the prior's pull.
  cal::MeasuredRun r = runs.front();
  EXPECT_GT(cal::predict_run_s(r, p.training_losses), 1.05 * cal::predict_run_s(r, TrainingLosses{}));
}

TEST(TrainingLossesSection, ValuesOutsideTheRangeOrUnknownNamesAreErrors) {
  const auto base = strata::costmodel::to_yaml(strata::costmodel::load_device_profile("h100-sxm-80gb"));
  auto with = [&](const std::string& section) { return base + "training_losses:\n" + section; };
  EXPECT_NO_THROW(strata::costmodel::parse_device_profile(
      with("  source: {kind: estimate, ref: test}\n  parameters: {gemm_sustain: {value: 0.9}}\n"), "ok"));
  EXPECT_THROW(strata::costmodel::parse_device_profile(
                   with("  source: {kind: estimate, ref: test}\n  parameters: {gemm_sustain: {value: 1.7}}\n"), "big"),
               InputError);
  EXPECT_THROW(strata::costmodel::parse_device_profile(
                   with("  source: {kind: estimate, ref: test}\n  parameters: {gemm_speed: {value: 0.9}}\n"), "name"),
               InputError);
  EXPECT_THROW(strata::costmodel::parse_device_profile(with("  parameters: {gemm_sustain: {value: 0.9}}\n"), "src"),
               InputError);
}

TEST(MeasuredRuns, BadRunsFilesAreOneClearError) {
  auto err = [](const std::string& y) {
    try {
      cal::parse_measured_runs(y, "runs.yaml");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(err("runs: []").find("no runs"), std::string::npos);
  EXPECT_NE(err("source: x\n").find("runs"), std::string::npos);
  const std::string row =
      "{model: %s, cluster: dgx-h100, source: s, strategy: {tp: 1, pp: 1, dp: 8, micro_batch: 1, global_batch: 64}, "
      "measured: {iteration_s: %s}}";
  auto one = [&](const std::string& model, const std::string& t) {
    std::string r = row;
    r.replace(r.find("%s"), 2, model);
    r.replace(r.find("%s"), 2, t);
    return r;
  };
  EXPECT_NE(err("runs: [" + one("no-such-model", "1") + "]").find("no-such-model"), std::string::npos);
  EXPECT_NE(err("runs: [" + one("llama3-8b", "-1") + "]").find("iteration_s"), std::string::npos);
  EXPECT_NE(err("runs: [" + one("llama3-8b", "1") + ", " + one("llama3-8b", "2") + "]").find("contradictory"),
            std::string::npos);
  EXPECT_EQ(err("runs: [" + one("llama3-8b", "1") + ", " + one("llama3-8b", "1.1") + "]"), "(accepted)");
  // tokens/s per GPU and seconds agree: 64 sequences of 8192 tokens on 8 GPUs in 2 s.
  const auto a = cal::parse_measured_runs(
      "runs: [{model: llama3-8b, cluster: dgx-h100, source: s, strategy: {tp: 1, pp: 1, dp: 8, micro_batch: 1, "
      "global_batch: 64}, measured: {tokens_per_s_per_gpu: 32768}}]",
      "t.yaml");
  EXPECT_NEAR(a[0].measured_s, 64.0 * 8192 / (32768.0 * 8), 1e-9);
}

// A row's pipeline_split names Megatron-LM's uneven split by its flags; the run is predicted on
// that split, not on strata's balanced one, and a split Megatron-LM refuses is one error.
TEST(MeasuredRuns, PipelineSplitIsMegatronsAndChangesThePrediction) {
  // llama3-8b: 32 blocks; pp 2 + the embedding and loss counted: 34 / 2 = 17 a rank, so rank
  // 0 holds the embedding + 16 blocks, rank 1 16 blocks + the head.
  const std::string row =
      "{model: llama3-8b, cluster: dgx-h100, source: s, strategy: {tp: 1, pp: 2, dp: 4, micro_batch: 1, "
      "global_batch: 64}, measured: {iteration_s: 1}%s}";
  const auto with = [&](const std::string& extra) {
    std::string r = row;
    r.replace(r.find("%s"), 2, extra);
    return "runs: [" + r + "]";
  };
  const auto counted =
      cal::parse_measured_runs(with(", pipeline_split: {account_for_embedding: true, account_for_loss: true}"), "r.yaml");
  ASSERT_EQ(counted[0].stage_layers.size(), 2u);
  EXPECT_EQ(counted[0].stage_layers[0].size(), 17u);  // group 0 + blocks 1-16
  EXPECT_EQ(counted[0].stage_layers[0].back(), 16);
  EXPECT_EQ(counted[0].stage_layers[1].front(), 17);
  EXPECT_EQ(counted[0].stage_layers[1].back(), 33);  // the head
  // Rank 0 with 3 blocks only, rank 1 the other 29: a far slower split than the balanced one.
  const auto lopsided = cal::parse_measured_runs(with(", pipeline_split: {first_stage_blocks: 3}"), "r.yaml");
  EXPECT_EQ(lopsided[0].stage_layers[0].size(), 4u);
  const auto balanced = cal::parse_measured_runs(with(""), "r.yaml");
  EXPECT_TRUE(balanced[0].stage_layers.empty());
  EXPECT_GT(cal::predict_run_s(lopsided[0], {}), 1.3 * cal::predict_run_s(balanced[0], {}));
  const auto err = [&](const std::string& extra) {
    return strata::testing::input_error_of([&] { cal::parse_measured_runs(with(extra), "r.yaml"); });
  };
  EXPECT_NE(err(", pipeline_split: {account_for_loss: true}").find("divisible by the pipeline size (2)"),
            std::string::npos);  // 33 over 2 ranks
  EXPECT_NE(err(", pipeline_split: {account_for_loss: true, last_stage_blocks: 3}").find("cannot be combined"),
            std::string::npos);
  EXPECT_NE(err(", pipeline_split: {first: 3}").find("first"), std::string::npos);
  // A --pipeline-model-parallel-layout string: 10 blocks with the embedding, 22 with the loss.
  const auto layout = cal::parse_measured_runs(with(", pipeline_split: {layout: \"E,t*10|t*22,L\"}"), "r.yaml");
  ASSERT_EQ(layout[0].stage_layers.size(), 2u);
  EXPECT_EQ(layout[0].stage_layers[0].size(), 11u);
  EXPECT_EQ(layout[0].stage_layers[1].size(), 23u);
  EXPECT_NE(err(", pipeline_split: {layout: \"E,t*10|t*10|t*12,L\"}").find("3 virtual stages"), std::string::npos);
  EXPECT_NE(err(", pipeline_split: {layout: \"E,t*10|t*22,L\", account_for_loss: true}").find("cannot be combined"),
            std::string::npos);
}

// The TorchTitan dev sets load on their stacks, FSDP as zero 3, TorchTitan's tokens/s per GPU back
// to seconds per step. The H100 rows ran on Grand Teton's 96 GB, 500 W part (its own device file)
// and are fitted, except Table 2's context-parallel rows (attention at 32k-256k tokens, checked);
// the A100 rows are all held-out checks.
// Megatron-Bridge's dense H100 rows: checks only (held out of every fitted profile), FP8, on the
// nearest stack; the 25.09 8B row ran Megatron-FSDP, which its stack_settings let the stack run.
TEST(MeasuredRuns, BridgeDenseRowsLoadAsChecks) {
  const auto rows =
      cal::load_measured_runs(std::string(STRATA_SOURCE_DIR) + "/bench/validation/runs/h100-bridge-dense.yaml");
  ASSERT_EQ(rows.size(), 12u);
  for (const auto& r : rows) {
    EXPECT_FALSE(r.fit) << r.id;
    EXPECT_EQ(r.stack.name, "nemo-2024-perf") << r.id;
    EXPECT_EQ(r.cluster.device.name, "h100-sxm-80gb") << r.id;
    EXPECT_EQ(r.strategy.precision, "fp8") << r.id;
  }
  // 25.09, Llama 3 8B on 8 GPUs: 128 sequences of 8192 tokens at 14,079 tokens/s per GPU.
  EXPECT_EQ(rows[0].id, "L8B-8-mb2509");
  EXPECT_EQ(rows[0].strategy.zero, 3);
  EXPECT_NEAR(rows[0].measured_s, 128.0 * 8192 / (14079.0 * 8), 1e-3);
}

TEST(MeasuredRuns, TorchTitanDevSetsLoad) {
  const std::string dir = std::string(STRATA_SOURCE_DIR) + "/bench/validation/runs/";
  const auto h100 = cal::load_measured_runs(dir + "torchtitan-h100.yaml");
  ASSERT_EQ(h100.size(), 15u);
  int fitted = 0;
  for (const auto& r : h100) {
    EXPECT_EQ(r.strategy.zero, 3) << r.id;
    EXPECT_EQ(r.stack.name.rfind("torchtitan-2024", 0), 0u) << r.id;
    EXPECT_EQ(r.cluster.device.name, "h100-sxm-96gb-500w") << r.id;
    EXPECT_EQ(r.fit, r.id.find("-cp") == std::string::npos) << r.id;  // Table 2: TT-8B-8-cp{1,2,4,8}-s{32..256}k
    fitted += r.fit ? 1 : 0;
  }
  EXPECT_EQ(fitted, 11);
  // Table 1, FSDP: 16 sequences of 8192 tokens on 8 GPUs at 5,762 tokens/s per GPU.
  EXPECT_EQ(h100[0].id, "TT-8B-8-fsdp");
  EXPECT_NEAR(h100[0].measured_s, 16.0 * 8192 / (5762.0 * 8), 1e-9);
  const auto a100 = cal::load_measured_runs(dir + "torchtitan-a100.yaml");
  ASSERT_EQ(a100.size(), 6u);
  for (const auto& r : a100) {
    EXPECT_FALSE(r.fit) << r.id;
    EXPECT_EQ(r.cluster.device.name.rfind("a100", 0), 0u) << r.id;
  }
}

// llm-foundry's MPT rows (PyTorch FSDP1): held-out checks, the single-node 2023-10 rows on the
// llm-foundry-2023 stack (FULL_SHARD over 8 GPUs as dp 8 x zero 3), the large-scale 2024-01 H100 rows on
// llm-foundry-2024 (SHARD_GRAD_OP as zero 2 for 1b and 3b, the Triton attention of 13b and 30b as flash1),
// the A100 40GB rows on llm-foundry-2023 and that part's own device with the A100 fit's losses. The MPT mapping (GELU MLP with biases, LayerNorm,
// learned positions, tied embeddings) gives the table's own NumParams column: 6,658,859,008 for the
// 7b model at sequence 2048 (README.md at 5e85bd62).
TEST(MeasuredRuns, LlmFoundryRowsLoadAsChecksWithThePublishedParameterCount) {
  const auto rows =
      cal::load_measured_runs(std::string(STRATA_SOURCE_DIR) + "/bench/validation/runs/llm-foundry.yaml");
  ASSERT_EQ(rows.size(), 192u);
  int h100 = 0;
  for (std::size_t i = 0; i < 96; ++i) {
    const auto& r = rows[i];
    EXPECT_FALSE(r.fit) << r.id;
    EXPECT_EQ(r.stack.name, "llm-foundry-2023") << r.id;
    EXPECT_EQ(r.stack.attention, strata::costmodel::AttentionKernel::Flash1) << r.id;
    EXPECT_EQ(r.strategy.zero, 3) << r.id;
    EXPECT_EQ(r.strategy.dp, 8) << r.id;
    h100 += r.cluster.device.name == "h100-sxm-80gb" ? 1 : 0;
  }
  EXPECT_EQ(h100, 37);
  for (std::size_t i = 96; i < 114; ++i) {
    const auto& r = rows[i];
    EXPECT_FALSE(r.fit) << r.id;
    EXPECT_EQ(r.stack.name, "llm-foundry-2024") << r.id;
    const bool small = r.id.find("-1b-") != std::string::npos || r.id.find("-3b-") != std::string::npos;
    EXPECT_EQ(r.strategy.zero, small ? 2 : 3) << r.id;
    const bool triton = r.id.find("-13b-") != std::string::npos || r.id.find("-30b-") != std::string::npos;
    EXPECT_EQ(r.stack.attention, triton ? strata::costmodel::AttentionKernel::Flash1 : strata::costmodel::AttentionKernel::Flash2)
        << r.id;
  }
  // The A100 40GB rows: llm-foundry-2023 on the 40GB part's own device and the A100 fit.
  for (std::size_t i = 114; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].stack.name, "llm-foundry-2023") << rows[i].id;
    EXPECT_EQ(rows[i].cluster.device.name, "a100-sxm-40gb") << rows[i].id;
    EXPECT_EQ(rows[i].cluster.device.memory_gib, 40) << rows[i].id;
    EXPECT_TRUE(rows[i].cluster.device.training_losses.present) << rows[i].id;
  }
  // The first H100 row: 30b at 8192 tokens, 168 sequences a step at 1,384 tokens/s per GPU.
  EXPECT_EQ(rows[0].id, "LF-h100-30b-s8192-mb1");
  EXPECT_NEAR(rows[0].measured_s, 168.0 * 8192 / (1384.0 * 8), 1e-9);
  const auto seven = std::find_if(rows.begin(), rows.end(), [](const auto& r) { return r.id == "LF-a100-7b-s2048-mb6"; });
  ASSERT_NE(seven, rows.end());
  EXPECT_EQ(strata::models::total_params(seven->model), 6658859008.0);
}

// A row's model may be a plan file, relative to the runs file like a model file: its model
// (here one in no catalog) is the one the run is predicted with.
TEST(MeasuredRuns, APlanFileGivesItsModel) {
  const auto dir = std::filesystem::temp_directory_path() / ("strata_runs_plan_" + std::to_string(::getpid()));
  strata::testing::write_plan_of_a_cut_llama(dir / "plans", "cut.yaml");
  const std::string runs = (dir / "runs.yaml").string();
  strata::write_file_atomic(runs,
                            "runs:\n  - {model: plans/cut.yaml, cluster: dgx-h100, source: s, strategy: {tp: 2, pp: 1, "
                            "dp: 4, micro_batch: 1, global_batch: 64, sequence_parallel: true}, measured: "
                            "{iteration_s: 1.5}}\n");
  const auto r = cal::load_measured_runs(runs);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].model.name, "llama3-8b-cut12");
  EXPECT_EQ(r[0].model.layers, 12);
  EXPECT_EQ(r[0].model.hidden, 4096);  // the rest of Llama 3 8B, as the plan carries it
}

// `include:` brings another runs file's rows first, relative to the including file, each with
// its own source; a file that includes itself, a missing one and a contradictory pair across
// files are one clear error each.
TEST(MeasuredRuns, IncludedRunsFilesComeFirstAndAreChecked) {
  const auto dir = std::filesystem::temp_directory_path() / ("strata_runs_include_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "more");
  const std::string row = "{{id: {}, model: llama3-8b, cluster: dgx-h100, strategy: {{tp: 2, pp: 1, dp: {}, "
                          "micro_batch: 1, global_batch: 64, sequence_parallel: true}}, measured: {{iteration_s: {}}}}}";
  strata::write_file_atomic((dir / "more" / "b.yaml").string(),
                            "source: file b\nruns:\n  - " + fmt::format(fmt::runtime(row), "b1", 4, 2.0) + "\n");
  const std::string a = (dir / "a.yaml").string();
  strata::write_file_atomic(a, "source: file a\ninclude: [more/b.yaml]\nruns:\n  - " +
                                   fmt::format(fmt::runtime(row), "a1", 2, 1.0) + "\n");
  const auto runs = cal::load_measured_runs(a);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, "b1");
  EXPECT_EQ(runs[0].source, "file b");
  EXPECT_EQ(runs[1].id, "a1");
  EXPECT_EQ(runs[1].source, "file a");
  // An include alone is a runs file.
  const std::string only = (dir / "only.yaml").string();
  strata::write_file_atomic(only, "include: [more/b.yaml]\n");
  EXPECT_EQ(cal::load_measured_runs(only).size(), 1u);
  const std::string self = (dir / "self.yaml").string();
  strata::write_file_atomic(self, "include: [self.yaml]\n");
  EXPECT_NE(strata::testing::input_error_of([&] { cal::load_measured_runs(self); }).find("included more than"),
            std::string::npos);
  const std::string missing = (dir / "missing.yaml").string();
  strata::write_file_atomic(missing, "include: [nowhere.yaml]\n");
  EXPECT_NE(strata::testing::input_error_of([&] { cal::load_measured_runs(missing); }).find("nowhere.yaml"),
            std::string::npos);
  const std::string clash = (dir / "clash.yaml").string();
  strata::write_file_atomic(clash, "source: c\ninclude: [more/b.yaml]\nruns:\n  - " +
                                       fmt::format(fmt::runtime(row), "c1", 4, 9.0) + "\n");
  EXPECT_NE(strata::testing::input_error_of([&] { cal::load_measured_runs(clash); }).find("contradictory"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

// stack_settings: what one job changed of its stack, read as stack keys over the stack's YAML.
TEST(MeasuredRuns, StackSettingsChangeTheRowsStackAndAreChecked) {
  const std::string row = "runs:\n  - {{id: a, model: llama3-8b, cluster: dgx-h100, stack: nemo-2024-perf, source: s, "
                          "strategy: {{tp: 4, pp: 1, dp: 2, micro_batch: 1, global_batch: 64, sequence_parallel: true}}, "
                          "measured: {{iteration_s: 1}}{}}}\n";
  const auto plain = cal::parse_measured_runs(fmt::format(fmt::runtime(row), ""), "r.yaml");
  const auto off =
      cal::parse_measured_runs(fmt::format(fmt::runtime(row), ", stack_settings: {overlap: {tp_comm: false}}"), "r.yaml");
  ASSERT_TRUE(plain[0].stack.overlap_tp_comm);
  EXPECT_FALSE(off[0].stack.overlap_tp_comm);
  EXPECT_EQ(off[0].stack.overlap_grad_reduce, plain[0].stack.overlap_grad_reduce);  // the rest of `overlap` kept
  TrainingLosses none;
  EXPECT_GT(cal::predict_run_s(off[0], none), cal::predict_run_s(plain[0], none));  // TP comm exposed
  const std::string bad = strata::testing::input_error_of([&] {
    cal::parse_measured_runs(fmt::format(fmt::runtime(row), ", stack_settings: {overlap: {tp_comms: false}}"), "r.yaml");
  });
  EXPECT_NE(bad.find("stack_settings"), std::string::npos) << bad;
  EXPECT_NE(bad.find("tp_comms"), std::string::npos) << bad;
  EXPECT_NE(strata::testing::input_error_of([&] {
              cal::parse_measured_runs(fmt::format(fmt::runtime(row), ", stack_settings: [1]"), "r.yaml");
            }).find("expected a map"),
            std::string::npos);
}

// validate --runs names the rows that ran but are predicted not to fit (a memory-model miss).
TEST(CheckRuns, RowsPredictedOverMemoryAreMarkedAndNamed) {
  const auto runs = cal::parse_measured_runs(
      "source: s\ndefaults: {cluster: dgx-h100, stack: mcore-2024}\nruns:\n"
      "  - {id: fits, model: llama3-8b, strategy: {tp: 2, pp: 1, dp: 4, micro_batch: 1, global_batch: 64, "
      "sequence_parallel: true, zero: 1}, measured: {iteration_s: 1}}\n"
      "  - {id: whole-70b-on-one-gpu, model: llama3-70b, strategy: {tp: 1, pp: 1, dp: 8, micro_batch: 1, "
      "global_batch: 64}, measured: {iteration_s: 1}}\n",
      "r.yaml");
  const cal::RunsCheck c = cal::check_runs(runs, nullptr, "");
  const auto line_of = [&](const std::string& id) {
    const auto at = c.text.find("  " + id + " ");
    return at == std::string::npos ? std::string() : c.text.substr(at, c.text.find('\n', at) - at);
  };
  EXPECT_EQ(line_of("fits").find("OVER"), std::string::npos) << c.text;
  EXPECT_NE(line_of("whole-70b-on-one-gpu").find("/80 OVER"), std::string::npos) << c.text;
  EXPECT_NE(c.text.find("# predicted over memory though they ran (1 of 2 rows): whole-70b-on-one-gpu\n"),
            std::string::npos)
      << c.text;
}

// A run may report its peak memory: validate prints it beside the prediction, with the
// signed miss, and sums the misses; nothing is fitted to it.
TEST(CheckRuns, ReportedPeakMemoryIsPrintedBesideThePrediction) {
  const std::string head = "source: s\ndefaults: {cluster: dgx-h100, stack: mcore-2024}\nruns:\n";
  const std::string row =
      "  - {id: r, model: llama3-8b, strategy: {tp: 2, pp: 1, dp: 4, micro_batch: 1, global_batch: 64, "
      "sequence_parallel: true, zero: 1}, measured: {iteration_s: 1";
  const auto plain = cal::parse_measured_runs(head + row + "}}\n", "r.yaml");
  EXPECT_EQ(plain[0].measured_memory_gib, 0.0);
  const double predicted = cal::predict_run(plain[0], plain[0].cluster.device.training_losses).peak_memory_gib;
  const auto runs = cal::parse_measured_runs(head + row + ", peak_memory_gib: 50}}\n", "r.yaml");
  EXPECT_EQ(runs[0].measured_memory_gib, 50.0);
  EXPECT_EQ(runs[0].measured_s, plain[0].measured_s);
  const cal::RunsCheck c = cal::check_runs(runs, nullptr, "");
  EXPECT_NE(c.text.find(fmt::format("/80 (reported 50.0, {:+.0f} %)", 100 * (predicted / 50 - 1))), std::string::npos)
      << c.text;
  EXPECT_NE(c.text.find(fmt::format("# memory: 1 rows report their peak; predicted vs reported MAPE {:.1f} %",
                                    100 * std::abs(predicted / 50 - 1))),
            std::string::npos)
      << c.text;
  EXPECT_EQ(cal::check_runs(plain, nullptr, "").text.find("# memory:"), std::string::npos);
  // A run that reported more than this cluster's 80 GiB ran on a larger part: a prediction over
  // 80 GiB agrees with it and is not named as a miss.
  const std::string big =
      "  - {id: big, model: llama3-70b, strategy: {tp: 1, pp: 1, dp: 8, micro_batch: 1, global_batch: 64}, "
      "measured: {iteration_s: 1";
  const cal::RunsCheck agree = cal::check_runs(cal::parse_measured_runs(head + big + ", peak_memory_gib: 95}}\n", "r.yaml"),
                                               nullptr, "");
  EXPECT_NE(agree.text.find("as their reported peak is too (1 of 1 rows: they ran on a larger part): big\n"),
            std::string::npos)
      << agree.text;
  EXPECT_EQ(agree.text.find("# predicted over memory though they ran"), std::string::npos) << agree.text;
  // Not a peak this device can hold, and not a number.
  EXPECT_THROW((void)cal::parse_measured_runs(head + row + ", peak_memory_gib: 500}}\n", "r.yaml"), InputError);
  EXPECT_THROW((void)cal::parse_measured_runs(head + row + ", peak_memory_gib: -3}}\n", "r.yaml"), InputError);
  EXPECT_THROW((void)cal::parse_measured_runs(head + row + ", peak_memory_gib: lots}}\n", "r.yaml"), InputError);
}

TEST(KendallTau, OrderAgreementIgnoringTies) {
  EXPECT_DOUBLE_EQ(cal::kendall_tau({1, 2, 3}, {10, 20, 30}), 1.0);
  EXPECT_DOUBLE_EQ(cal::kendall_tau({1, 2, 3}, {30, 20, 10}), -1.0);
  EXPECT_NEAR(cal::kendall_tau({1, 2, 3}, {10, 30, 20}), 1.0 / 3, 1e-12);
  EXPECT_TRUE(std::isnan(cal::kendall_tau({1, 1}, {1, 2})));
}

}  // namespace
