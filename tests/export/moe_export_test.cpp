// Mixture-of-experts exports beyond the model shape: DeepSeek-V3's bias-balanced sigmoid
// router, multi-token prediction (flag, pipeline layout, import back), and the layouts each
// framework cannot run, refused by name. Expected values are written out by hand from the
// plans below and the frameworks' sources cited in the exporters.
#include <gtest/gtest.h>

#include <algorithm>

#include "export/export_formats.h"
#include "export/import_megatron.h"
#include "tests/export/export_checks.h"
#include "tests/export/test_plans.h"

using namespace strata::exports;
using namespace strata::exports::testing;
using strata::planner::Plan;

namespace {

// DeepSeek-V3 as trained: the main model and one MTP block (num_nextn_predict_layers 1).
Plan deepseek_mtp_plan() {
  Plan p = deepseek_plan();
  p.model.mtp_layers = 1;
  return p;
}

// Mixtral on tp 2 x dp 8 with ep 8 x etp 2: every DeepSpeed MoE check passes.
Plan mixtral_deepspeed_plan() {
  return moe_plan(strata::models::load_model("mixtral-8x7b"), 8, 2, 1, 1, 64, 8, 2);
}

}  // namespace

TEST(MegatronMoe, SigmoidRouterGetsTheExpertBiasAndMtpItsLayerCount) {
  const YAML::Node args = table("megatron_args.yaml")["args"];
  const Plan p = deepseek_mtp_plan();
  for (const auto& [flag, value] : megatron_args(p, overlap_stack())) expect_arg_type(args, flag, value);
  const auto f = arg_map(megatron_args(p, overlap_stack()));
  EXPECT_EQ(f.at("--moe-router-score-function"), "sigmoid");
  EXPECT_EQ(f.count("--moe-router-enable-expert-bias"), 1u);
  EXPECT_EQ(f.at("--mtp-num-layers"), "1");
  // 61 blocks over pp 8 do not split evenly: the layout ends with the MTP block before the loss.
  const std::string layout = f.at("--pipeline-model-parallel-layout");
  EXPECT_EQ(layout.substr(layout.size() - 4), ",m,L") << layout;
  EXPECT_EQ(std::count(layout.begin(), layout.end(), 'm'), 1) << layout;
  // The main model alone writes no MTP flag.
  EXPECT_EQ(arg_map(megatron_args(deepseek_plan(), overlap_stack())).count("--mtp-num-layers"), 0u);
  // Megatron refuses the expert bias with softmax scores (TransformerConfig.__post_init__).
  for (const Plan& softmax : {mixtral_plan(), qwen_moe_plan(), capacity_moe_plan()})
    EXPECT_EQ(arg_map(megatron_args(softmax, overlap_stack())).count("--moe-router-enable-expert-bias"),
              0u)
        << softmax.model.name;
}

TEST(MegatronMoe, LayoutPlacesMtpBlocksRightBeforeTheLoss) {
  Plan d = make_plan(gpt(10), 1, 1, 2, 2, 1, 8);  // uneven interleaved: written as a layout
  d.stage_layers = stage_map({2, 3, 3, 2});
  EXPECT_EQ(megatron_layout(d), "E,t*2|t*3|t*3|t*2,L");
  d.model.mtp_layers = 1;
  EXPECT_EQ(megatron_layout(d), "E,t*2|t*3|t*3|t*2,m,L");
  d.model.mtp_layers = 2;
  EXPECT_EQ(megatron_layout(d), "E,t*2|t*3|t*3|t*2,m*2,L");
  const auto f = arg_map(megatron_args(d, plain_stack()));
  EXPECT_EQ(f.at("--pipeline-model-parallel-layout"), "E,t*2|t*3|t*3|t*2,m*2,L");
  EXPECT_EQ(f.at("--mtp-num-layers"), "2");
}

TEST(MegatronMoe, ImportReadsMtpBackAndRefusesALayoutThatDisagrees) {
  Plan d = make_plan(gpt(10), 1, 1, 2, 2, 1, 8);
  d.stage_layers = stage_map({2, 3, 3, 2});
  d.model.mtp_layers = 2;
  const ImportedJob job = import_megatron_args(export_megatron(d, plain_stack()), "job.sh");
  EXPECT_EQ(job.model.mtp_layers, 2);
  EXPECT_EQ(job.stage_layers, d.stage_layers);
  EXPECT_EQ(import_megatron_args(export_megatron(deepseek_mtp_plan(), overlap_stack()), "ds.sh")
                .model.mtp_layers,
            1);
  const std::string base =
      "pretrain_gpt.py --num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
      "--vocab-size 1000 --pipeline-model-parallel-size 2 --micro-batch-size 1 "
      "--global-batch-size 8 ";
  const auto error = [&](const std::string& rest) {
    try {
      import_megatron_args(base + rest, "job.sh");
    } catch (const strata::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("--pipeline-model-parallel-layout 'E,t*2|t*2,m,L'").find("--mtp-num-layers is 0"),
            std::string::npos);
  EXPECT_NE(error("--mtp-num-layers 1 --pipeline-model-parallel-layout 'E,t*2|t*2,L'")
                .find("--mtp-num-layers 1 needs as many MTP blocks (m) before the loss (L)"),
            std::string::npos);
  EXPECT_NE(error("--mtp-num-layers 1 --pipeline-model-parallel-layout 'E,t*2,m|t*2,L'")
                .find("right before the loss (L)"),
            std::string::npos);
  EXPECT_NE(error("--mtp-num-layers -1").find("--mtp-num-layers '-1' is not a positive integer"),
            std::string::npos);
  EXPECT_EQ(error("--mtp-num-layers 1 --pipeline-model-parallel-layout 'E,t*2|t*2,m,L'"), "no error");
}

TEST(TorchTitanMoe, RefusesMtpAndExpertsKeptWholeOverTpWithoutEp) {
  EXPECT_NE(export_error(deepseek_mtp_plan(), ExportTarget::TorchTitan)
                .find("1 multi-token-prediction block(s) (model.mtp_layers)"),
            std::string::npos);
  // ep 1, tp 2: TorchTitan splits the experts over tp; the plan keeps them whole (etp 1).
  const Plan whole = moe_plan(strata::models::load_model("mixtral-8x7b"), 4, 2, 1, 1, 64, 1, 1);
  EXPECT_NE(export_error(whole, ExportTarget::TorchTitan)
                .find("splits experts with etp 1 over tp 2 without expert parallelism"),
            std::string::npos);
  // etp = tp without ep is what TorchTitan does by itself: no expert keys written.
  const Plan split = moe_plan(strata::models::load_model("mixtral-8x7b"), 4, 2, 1, 1, 64, 1, 2);
  const auto t = toml_sections(export_torchtitan(split, overlap_stack()));
  EXPECT_EQ(t.at("parallelism").count("expert_parallel_degree"), 0u);
  EXPECT_EQ(t.at("parallelism").at("tensor_parallel_degree"), "2");
}

TEST(DeepSpeedMoe, MegatronDeepSpeedRefusesMtpAndTheConfigNotesModelCode) {
  Plan p = mixtral_deepspeed_plan();
  EXPECT_EQ(export_error(p, ExportTarget::MegatronDeepSpeed), "no error");
  p.model.mtp_layers = 2;
  EXPECT_NE(export_error(p, ExportTarget::MegatronDeepSpeed)
                .find("2 multi-token-prediction block(s) (model.mtp_layers), which "
                      "Megatron-DeepSpeed main 4efb479d has no arguments for"),
            std::string::npos);
  // The JSON holds no model: MTP is the job's own model code, said in the note.
  EXPECT_EQ(export_error(p, ExportTarget::DeepSpeed), "no error");
  const std::string note = deepspeed_model_code_note(p);
  EXPECT_NE(note.find("deepspeed.moe.layer.MoE(hidden_size=4096"), std::string::npos);
  EXPECT_NE(note.find("; DeepSpeed has no multi-token-prediction module: the model code must add "
                      "the 2 MTP block(s)"),
            std::string::npos);
  // A dense MLA model: the attention is model code; DeepSpeed's config still runs the job.
  Plan mla = make_plan(llama(4), 8, 1, 1, 1, 1, 8);
  mla.model.mla = strata::models::load_model("deepseek-v3").mla;
  mla.model.kv_heads = mla.model.heads;
  EXPECT_EQ(export_error(mla, ExportTarget::DeepSpeed), "no error");
  EXPECT_EQ(deepspeed_model_code_note(mla).rfind("DeepSpeed has no multi-latent attention layer", 0),
            0u);
  EXPECT_NE(export_error(mla, ExportTarget::MegatronDeepSpeed).find("multi-latent attention"),
            std::string::npos);
}

namespace {
// Llama 4 Maverick (catalog: dense and MoE blocks alternate, layer_step 2): tp 4 x dp 2, ep 8.
Plan maverick_plan() { return moe_plan(strata::models::load_model("llama4-maverick"), 2, 4, 1, 1, 64, 8, 1); }
}  // namespace

TEST(MegatronMoe, InterleavedDenseAndMoeBlocksWriteTheListFormAndReadBack) {
  const YAML::Node args = table("megatron_args.yaml")["args"];
  const Plan p = maverick_plan();
  for (const auto& [flag, value] : megatron_args(p, overlap_stack())) expect_arg_type(args, flag, value);
  const auto f = arg_map(megatron_args(p, overlap_stack()));
  // Blocks 2, 4, ..., 48 MoE: Megatron's integer 2 would make blocks 1, 3, ... MoE instead
  // (i % 2 == 0, 0-based), so the list form.
  EXPECT_EQ(f.at("--moe-layer-freq"), "([0]*1+[1]*1)*24");
  EXPECT_EQ(f.at("--ffn-hidden-size"), "16384");
  EXPECT_EQ(f.at("--moe-ffn-hidden-size"), "8192");
  EXPECT_EQ(f.at("--moe-shared-expert-intermediate-size"), "8192");
  EXPECT_EQ(f.at("--num-experts"), "128");
  const ImportedJob job = import_megatron_args(export_megatron(p, plain_stack()), "job.sh");
  ASSERT_TRUE(job.model.moe);
  EXPECT_EQ(job.model.moe->layer_step, 2);
  EXPECT_EQ(job.model.moe->first_dense_layers, 0);
  EXPECT_EQ(job.model.ffn, 16384);
  EXPECT_EQ(job.model.moe_layer_count(), 24);
  // Every block MoE writes no --moe-layer-freq (Megatron's default 1).
  EXPECT_EQ(arg_map(megatron_args(mixtral_plan(), overlap_stack())).count("--moe-layer-freq"), 0u);
}

TEST(DeepSpeedMoe, ExpertIntervalIsTheLayerStepAndMaverickIsRefusedByName) {
  // Megatron-DeepSpeed: block i (1-based) MoE when i % --expert-interval == 0, strata's rule.
  Plan p = mixtral_deepspeed_plan();
  p.model.moe->layer_step = 2;
  EXPECT_EQ(arg_map(megatron_deepspeed_args(p, overlap_stack())).at("--expert-interval"), "2");
  EXPECT_NE(deepspeed_model_code_note(p).find("on the blocks numbered (from 1) a multiple of 2, the others dense"), std::string::npos);
  // Maverick is refused by name: its sigmoid router and shared expert are not DeepSpeed's gate,
  // and its experts (8192) are narrower than its dense blocks (16384), where each
  // Megatron-DeepSpeed expert is the model's MLP.
  EXPECT_NE(export_error(maverick_plan(), ExportTarget::MegatronDeepSpeed).find("routes with a sigmoid (moe.router)"),
            std::string::npos);
  p.model.ffn = 2 * p.model.moe->expert_ffn;
  EXPECT_NE(export_error(p, ExportTarget::MegatronDeepSpeed)
                .find("has experts 14336 wide (moe.expert_ffn) and a dense MLP 28672 wide"),
            std::string::npos);
}

TEST(TorchTitanMoe, InterleavedBlocksNameTheLlama4FlavorStep) {
  const Plan p = maverick_plan();
  ASSERT_EQ(export_error(p, ExportTarget::TorchTitan), "no error");
  EXPECT_NE(export_torchtitan(p, overlap_stack()).find("interleave_moe_layer_step 2 (MoE on the layers numbered from 1 "
                                                       "a multiple of it, the others a dense MLP of width 16384; "
                                                       "llama4 flavors)"),
            std::string::npos);
  EXPECT_EQ(export_torchtitan(mixtral_plan(), overlap_stack()).find("interleave_moe_layer_step"), std::string::npos);
}

TEST(MegatronMoe, EpOverlapWritesMegatronsFlagAndTheOthersRefuseIt) {
  Plan p = mixtral_deepspeed_plan();
  EXPECT_EQ(arg_map(megatron_args(p, overlap_stack())).count("--overlap-moe-expert-parallel-comm"), 0u);
  p.strategy.ep_overlap = true;
  const YAML::Node args = table("megatron_args.yaml")["args"];
  for (const auto& [flag, value] : megatron_args(p, overlap_stack())) expect_arg_type(args, flag, value);
  const auto f = arg_map(megatron_args(p, overlap_stack()));
  ASSERT_EQ(f.count("--overlap-moe-expert-parallel-comm"), 1u);
  EXPECT_EQ(f.at("--overlap-moe-expert-parallel-comm"), "");
  EXPECT_EQ(f.count("--delay-wgrad-compute"), 0u);
  p.strategy.delay_wgrad = true;
  for (const auto& [flag, value] : megatron_args(p, overlap_stack())) expect_arg_type(args, flag, value);
  EXPECT_EQ(arg_map(megatron_args(p, overlap_stack())).count("--delay-wgrad-compute"), 1u);
  p.strategy.delay_wgrad = false;
  // Neither DeepSpeed nor TorchTitan has the merged forward-backward schedule.
  for (auto target : {ExportTarget::DeepSpeed, ExportTarget::MegatronDeepSpeed, ExportTarget::TorchTitan})
    EXPECT_NE(export_error(p, target).find("strategy.ep_overlap"), std::string::npos) << to_string(target);
}
