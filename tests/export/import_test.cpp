// Import of the jobs users already run: a Megatron-LM command line and a DeepSpeed config.
// Round trips (export -> import gives the plan back) over plans covering interleaved, uneven
// stages, ZeRO-1/2/3, context parallel, GQA Llama, SP and recompute; hand-written command
// lines; refusals by name.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/errors.h"
#include "export/export_formats.h"
#include "export/import_deepspeed.h"
#include "export/import_megatron.h"
#include "export/megatron_arg_table.h"
#include "export/imported_job.h"
#include "export/launch_script.h"
#include "planner/stack_support.h"
#include "tests/export/test_plans.h"
#include "tests/input_error_of.h"

using namespace strata::exports;
using namespace strata::exports::testing;
using strata::InputError;
using strata::planner::Plan;
using strata::planner::Recompute;
using strata::planner::ScheduleKind;

namespace {

struct Case {
  const char* what;
  Plan plan;
};

std::vector<Case> round_trip_plans() {
  std::vector<Case> out;
  out.push_back({"gpt data parallel", make_plan(gpt(12), 8, 1, 1, 1, 4, 256)});
  Plan zero1 = make_plan(gpt(24), 2, 4, 2, 1, 2, 64);
  zero1.strategy.zero = 1;
  zero1.strategy.sequence_parallel = true;
  zero1.strategy.recompute = Recompute::Full;
  out.push_back({"gpt zero-1 sp full recompute", zero1});
  Plan gqa = make_plan(llama(32), 2, 2, 4, 2, 1, 64);
  gqa.strategy.recompute = Recompute::Selective;
  out.push_back({"gqa llama interleaved", gqa});
  Plan uneven = make_plan(gpt(10), 2, 1, 4, 1, 1, 16);
  uneven.stage_layers = stage_map({1, 4, 4, 1});
  out.push_back({"uneven first/last", uneven});
  // Megatron-LM's first/last counts with virtual stages (first 4, last 6 over 2 chunks).
  Plan uneven_vpp = make_plan(gpt(30), 1, 1, 4, 2, 1, 8);
  uneven_vpp.stage_layers = stage_map({2, 5, 5, 3, 2, 5, 5, 3});
  out.push_back({"uneven first/last interleaved", uneven_vpp});
  // DeepSeek-V3's 61 blocks on 16 stages: first 2, last 3, 4 on each middle rank.
  Plan deepseek_like = make_plan(gpt(61), 1, 1, 16, 1, 1, 16);
  deepseek_like.stage_layers = stage_map({2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3});
  out.push_back({"61 blocks on pp 16, first 2 last 3", deepseek_like});
  // Megatron-LM's --account-for-embedding/loss-in-pipeline-split: 22 blocks + embedding + loss
  // = 24 over pp 4 x vpp 2, 3 a chunk; chunk 0 of rank 0 and chunk 1 of rank 3 hold 2 (rank
  // 0's chunks differ, so no first/last count gives it).
  Plan counted = make_plan(gpt(22), 1, 1, 4, 2, 1, 8);
  counted.stage_layers = stage_map({2, 3, 3, 3, 3, 3, 3, 2});
  out.push_back({"embedding and loss counted, interleaved", counted});
  Plan loss_counted = make_plan(gpt(15), 1, 1, 4, 2, 1, 8);  // 15 + loss = 16, 2 a chunk
  loss_counted.stage_layers = stage_map({2, 2, 2, 2, 2, 2, 2, 1});
  out.push_back({"loss counted, interleaved", loss_counted});
  Plan layout = make_plan(llama(10), 1, 2, 2, 2, 1, 8);
  layout.stage_layers = stage_map({2, 3, 3, 2});
  layout.strategy.zero = 1;
  out.push_back({"uneven interleaved layout", layout});
  Plan arbitrary = make_plan(gpt(10), 1, 1, 4, 1, 2, 8);
  arbitrary.stage_layers = stage_map({3, 2, 4, 1});
  arbitrary.strategy.rank_order = "tp-pp-dp";
  out.push_back({"arbitrary stages, tp-pp-dp", arbitrary});
  Plan cp_zero3 = with_cp_zero(make_plan(llama(8), 2, 2, 1, 1, 1, 16), 2, 3);
  cp_zero3.strategy.sequence_parallel = true;
  out.push_back({"gqa llama cp 2, zero-3, sp", cp_zero3});
  out.push_back({"gpt cp 2 x pp 2, zero-2", with_cp_zero(make_plan(gpt(8), 2, 1, 2, 1, 1, 16), 2, 2)});
  return out;
}

}  // namespace

TEST(ImportMegatron, ExportThenImportGivesThePlanBackForTwelvePlansAndThreeStacks) {
  for (const auto& stack : {overlap_stack(), plain_stack(), all_gather_stack()})
    for (const auto& [what, p] : round_trip_plans()) {
      SCOPED_TRACE(std::string(what) + " / " + stack.name);
      ImportedJob job = import_megatron_args(export_megatron(p, stack), "args.sh");
      resolve_world_size(job, 0, "args.sh");  // from the torchrun prefix
      auto model = job.model;
      model.name = p.model.name;
      EXPECT_EQ(model, p.model);
      EXPECT_EQ(job.strategy, p.strategy);
      EXPECT_EQ(job.stage_layers, p.stage_layers);
      EXPECT_EQ(job.world_size, p.strategy.gpus());
      // The stack settings that the command states come back.
      EXPECT_EQ(*job.stack.precision, stack.precision);
      EXPECT_EQ(*job.stack.attention, stack.attention);
      const bool dp = p.strategy.dp > 1;
      EXPECT_EQ(*job.stack.overlap_grad_reduce, stack.overlap_grad_reduce && dp);
      EXPECT_EQ(*job.stack.overlap_param_gather,
                stack.overlap_param_gather && p.strategy.zero >= 1 && dp);
      EXPECT_EQ(*job.stack.overlap_tp_comm, stack.overlap_tp_comm && p.strategy.sequence_parallel);
      if (p.strategy.cp > 1) EXPECT_EQ(*job.stack.cp_comm, stack.cp_comm);
      else EXPECT_FALSE(job.stack.cp_comm.has_value());
      // Megatron-FSDP's required flags that do not change the prediction.
      const std::vector<std::string> fsdp_only = {"--no-gradient-accumulation-fusion", "--ckpt-format"};
      EXPECT_EQ(job.ignored, p.strategy.zero >= 2 ? fsdp_only : std::vector<std::string>());
    }
}

TEST(ImportMegatron, ReadsAHandWrittenTorchrunScriptWithContinuationsAndComments) {
  const std::string script = R"(#!/bin/bash
# Llama-2 7B-like job
CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun --nproc_per_node=8 --nnodes 2 --node_rank 0 \
    --master_addr "$MASTER" pretrain_gpt.py \
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \
    --ffn-hidden-size 11008 --seq-length 4096 --max-position-embeddings 4096 \
    --swiglu --normalization RMSNorm --position-embedding-type rope \
    --disable-bias-linear --untie-embeddings-and-output-weights \
    --tokenizer-type Llama2Tokenizer --tokenizer-model /data/tok.model --vocab-size=32000 \
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --sequence-parallel \
    --micro-batch-size 1 --global-batch-size 128 --bf16 --use-flash-attn \
    --use-distributed-optimizer --overlap-grad-reduce \
    --lr 3e-4 --data-path '/data/my corpus' --log-interval 10 --save /ckpt   # operational
)";
  ImportedJob job = import_megatron_args(script, "llama.sh");
  EXPECT_EQ(job.world_size, 16);
  ImportedJob other = job;
  EXPECT_THROW(resolve_world_size(other, 8, "llama.sh"), InputError);  // --gpus disagrees
  resolve_world_size(job, 16, "llama.sh");
  EXPECT_EQ(job.model.layers, 32);
  EXPECT_EQ(job.model.hidden, 4096);
  EXPECT_EQ(job.model.heads, 32);
  EXPECT_EQ(job.model.kv_heads, 32);
  EXPECT_EQ(job.model.ffn, 11008);
  EXPECT_EQ(job.model.vocab, 32000);
  EXPECT_EQ(job.model.activation, strata::models::Activation::SwiGlu);
  EXPECT_FALSE(job.model.tied_embeddings);
  EXPECT_EQ(job.strategy.dp, 4);  // 16 / (2 x 2)
  EXPECT_EQ(job.strategy.tp, 2);
  EXPECT_EQ(job.strategy.pp, 2);
  EXPECT_EQ(job.strategy.zero, 1);
  EXPECT_TRUE(job.strategy.sequence_parallel);
  EXPECT_EQ(job.strategy.global_batch, 128);
  EXPECT_EQ(job.strategy.schedule, ScheduleKind::OneFOneB);
  EXPECT_EQ(job.stage_layers, stage_map({16, 16}));
  EXPECT_EQ(*job.stack.attention, strata::costmodel::AttentionKernel::Flash2);
  EXPECT_TRUE(*job.stack.overlap_grad_reduce);
  EXPECT_FALSE(*job.stack.overlap_param_gather);
  EXPECT_EQ(job.ignored, (std::vector<std::string>{"--tokenizer-model", "--lr", "--data-path",
                                                   "--log-interval", "--save"}));
}

TEST(ImportMegatron, RefusesWhatStrataDoesNotModelByName) {
  const std::string base =
      "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 "
      "--vocab-size 1000 --micro-batch-size 1 ";
  EXPECT_NO_THROW(import_megatron_args(base, "a"));
  const auto message = [&](const std::string& extra) {
    return strata::testing::input_error_of([&] { import_megatron_args(base + extra, "a"); });
  };
  // Group-limited routing is read into the model (moe.groups, max_groups_per_token); one
  // flag without the other is refused.
  const auto grouped = import_megatron_args(
      base + "--num-experts 8 --moe-router-num-groups 4 --moe-router-group-topk 2", "a");
  ASSERT_TRUE(grouped.model.moe);
  EXPECT_EQ(grouped.model.moe->groups, 4);
  EXPECT_EQ(grouped.model.moe->max_groups_per_token, 2);
  EXPECT_NE(message("--num-experts 8 --moe-router-num-groups 4").find("go together"), std::string::npos);
  EXPECT_EQ(message("--context-parallel-size 2"), "no error");
  EXPECT_NE(message("--context-parallel-size 2 --cp-comm-type a2a").find("--cp-comm-type 'a2a'"),
            std::string::npos);
  EXPECT_NE(message("--context-parallel-size 2 --cp-comm-type p2p a2a").find("'a2a' is not a flag"),
            std::string::npos);  // a per-layer list
  EXPECT_NE(message("--data-parallel-sharding-strategy optim_grads")
                .find("--data-parallel-sharding-strategy needs --use-megatron-fsdp"),
            std::string::npos);
  EXPECT_NE(message("--use-megatron-fsdp --use-distributed-optimizer "
                    "--data-parallel-sharding-strategy zero3")
                .find("'zero3' is not no_shard"),
            std::string::npos);
  EXPECT_NE(message("--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params")
                .find("needs --use-distributed-optimizer"),
            std::string::npos);
  // Block recompute of n layers per model chunk: the first n blocks of each chunk re-run
  // (strategy.recompute_layers), every block once n covers a chunk (4 layers, one chunk; 2 per
  // chunk on pp 2).
  const auto block = [&](const std::string& extra) {
    return import_megatron_args(base + "--recompute-granularity full --recompute-method block " + extra, "a").strategy;
  };
  EXPECT_EQ(block("--recompute-num-layers 2").recompute, Recompute::Full);
  EXPECT_EQ(block("--recompute-num-layers 2").recompute_layers, 2);
  EXPECT_EQ(block("--recompute-num-layers 4").recompute_layers, 0);
  EXPECT_EQ(block("--recompute-num-layers 2 --pipeline-model-parallel-size 2").recompute_layers, 0);
  EXPECT_EQ(block("--recompute-num-layers 1 --pipeline-model-parallel-size 2").recompute_layers, 1);
  EXPECT_NE(message("--recompute-granularity full --recompute-method uniform --recompute-num-layers 2")
                .find("got method 'uniform', num-layers 2"),
            std::string::npos);
  EXPECT_NE(message("--swiglu").find("--swiglu without --disable-bias-linear"), std::string::npos);
  EXPECT_NE(message("--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'E,t*2|t*2,mtp,L'")
                .find("mtp"),
            std::string::npos);
  EXPECT_NE(message("--tensor-model-parallel-size x").find("--tensor-model-parallel-size 'x'"),
            std::string::npos);
  // Uneven first/last stages take virtual stages only as a count per rank (Megatron-LM).
  EXPECT_NE(message("--pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 2 "
                    "--num-layers-per-virtual-pipeline-stage 1")
                .find("from --num-virtual-stages-per-pipeline-rank"),
            std::string::npos);
  EXPECT_NE(message("--pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 1 "
                    "--num-virtual-stages-per-pipeline-rank 2")
                .find("(1) must be divisible by the virtual stages"),
            std::string::npos);
  EXPECT_NE(message("--pipeline-model-parallel-size 3").find("divisible by pp x vpp = 3"),
            std::string::npos);
  // The embedding / loss counted as layers: not with first/last counts, and L + e + l must
  // split over the ranks and chunks (Megatron-LM's rules).
  EXPECT_NE(message("--pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 1 "
                    "--account-for-loss-in-pipeline-split")
                .find("cannot be combined"),
            std::string::npos);
  EXPECT_NE(message("--pipeline-model-parallel-size 4 --account-for-loss-in-pipeline-split")
                .find("divisible by the pipeline size (4)"),
            std::string::npos);
  EXPECT_NE(message("--micro-batch-size").find("--micro-batch-size needs a value"), std::string::npos);
  EXPECT_THROW(import_megatron_args("--num-layers 4 --hidden-size 256 --num-attention-heads 4 "
                                    "--seq-length 128", "a"),
               InputError);  // no --vocab-size
  EXPECT_THROW(import_megatron_args(base + "--data-path 'unterminated", "a"), InputError);
  // Sizes that would overflow are refused, not wrapped.
  EXPECT_THROW(import_megatron_args("torchrun --nnodes 4611686018427387904 --nproc_per_node 4 "
                                    "pretrain_gpt.py " + base, "a"),
               InputError);
  EXPECT_THROW(import_megatron_args(base + "--pipeline-model-parallel-size 2 "
                                    "--decoder-first-pipeline-num-layers 9223372036854775807",
                                    "a"),
               InputError);
  EXPECT_THROW(import_megatron_args(base + "--pipeline-model-parallel-size 2 "
                                    "--pipeline-model-parallel-layout 'E,t*9223372036854775807|t,L'",
                                    "a"),
               InputError);
  ImportedJob huge = import_megatron_args(base + "--micro-batch-size 1099511627776", "a");
  EXPECT_THROW(resolve_world_size(huge, 1 << 30, "a"), InputError);  // micro x dp overflows
  ImportedJob no_world = import_megatron_args(base, "a");
  EXPECT_THROW(resolve_world_size(no_world, 0, "a"), InputError);  // no torchrun, no --gpus
  resolve_world_size(no_world, 4, "a");
  EXPECT_EQ(no_world.strategy.dp, 4);
  EXPECT_EQ(no_world.strategy.global_batch, 4);  // Megatron-LM's default: micro x dp
}

// Per-head Q and K norms: --qk-layernorm comes back as model.qk_norm; Megatron-DeepSpeed has
// no such argument and refuses by name.
TEST(ImportMegatron, QkLayernormIsTheModelsQkNorms) {
  Plan p = make_plan(llama(8), 2, 2, 2, 1, 1, 16);
  p.model.qk_norm = true;
  const std::string args = export_megatron(p, plain_stack());
  EXPECT_NE(args.find("--qk-layernorm"), std::string::npos);
  ImportedJob job = import_megatron_args(args, "args.sh");
  EXPECT_TRUE(job.model.qk_norm);
  p.model.qk_norm = false;
  EXPECT_FALSE(import_megatron_args(export_megatron(p, plain_stack()), "args.sh").model.qk_norm);
  p.model.qk_norm = true;
  const std::string why = strata::testing::input_error_of([&] { export_megatron_deepspeed(p, plain_stack()); });
  EXPECT_NE(why.find("model.qk_norm"), std::string::npos) << why;
}

// An import error names the line of the script where the flag it is about stands (the flag's
// own line, or the array that holds it), so the user knows what to change.
TEST(ImportMegatron, ErrorsNameTheLineOfTheFlag) {
  const std::string script =
      "#!/bin/bash\n"
      "MODEL=(--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --vocab-size 1000)\n"
      "POS=(--position-embedding-type rope --rope-type yarn)\n"
      "torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py \"${MODEL[@]}\" \\\n"
      "  --micro-batch-size 1 \"${POS[@]}\"\n";
  const std::string why = strata::testing::input_error_of([&] { import_megatron_args(script, "job.sh"); });
  EXPECT_EQ(why.rfind("job.sh:3: --rope-type 'yarn'", 0), 0u) << why;
  // A message that names no flag keeps the file alone.
  const std::string no_flag = strata::testing::input_error_of([&] { import_megatron_args("--num-layers 4", "job.sh"); });
  EXPECT_EQ(no_flag.rfind("job.sh: ", 0), 0u) << no_flag;
}

// Flags strata does not model are read by Megatron-LM's own arities (the embedded
// export/frameworks/megatron_args.yaml): a store_true flag takes no word, an int flag one, a
// list flag every word up to the next flag; a flag the table lacks is named as no Megatron-LM
// flag, apart from the ones strata does not model.
TEST(ImportMegatron, UnmodelledFlagsAreReadByMegatronsOwnArities) {
  ASSERT_EQ(megatron_arg_arity("--adlr-autoresume"), std::optional(MegatronArity::None));
  ASSERT_EQ(megatron_arg_arity("--seed"), std::optional(MegatronArity::One));
  ASSERT_EQ(megatron_arg_arity("--rampup-batch-size"), std::optional(MegatronArity::Many));
  EXPECT_FALSE(megatron_arg_arity("--num-layer").has_value());
  EXPECT_EQ(megatron_arg_table_commit().size(), 40u);
  const std::string shape = "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --vocab-size 1000 "
                            "--micro-batch-size 1 ";
  const auto why = [](const std::string& args) {
    return strata::testing::input_error_of([&] { import_megatron_args(args, "job.sh"); });
  };
  // Accepted: one value after --seed, three after --rampup-batch-size.
  const ImportedJob ok = import_megatron_args(shape + "--seed 1234 --rampup-batch-size 16 16 5859375", "job.sh");
  EXPECT_EQ(ok.strategy.micro_batch, 1);
  // A second word after a one-value flag is no flag, and is named.
  EXPECT_NE(why(shape + "--seed 1234 5678").find("'5678' is not a flag"), std::string::npos);
  // A word after a store_true flag is not its value.
  const std::string flag_value = why(shape + "--adlr-autoresume 5");
  EXPECT_NE(flag_value.find("--adlr-autoresume takes no value"), std::string::npos) << flag_value;
  EXPECT_NE(flag_value.find("'5'"), std::string::npos) << flag_value;
  // A typo is told apart from a flag strata does not model.
  const std::string typo = why(shape + "--num-layer 24");
  EXPECT_NE(typo.find("--num-layer is not a flag of Megatron-LM"), std::string::npos) << typo;
  EXPECT_NE(typo.find(megatron_arg_table_commit().substr(0, 8)), std::string::npos) << typo;
}

TEST(ImportMegatron, ShellWordsResolveQuotesEscapesAndContinuations) {
  EXPECT_EQ(shell_words("a 'b c' \"d e\" f\\ g \\\n h # comment\n i#j", "s"),
            (std::vector<std::string>{"a", "b c", "d e", "f g", "h", "i#j"}));
}

TEST(ImportDeepSpeed, ExportThenImportGivesTheDataAndPipelineLayoutBack) {
  std::vector<Case> plans;
  for (auto& c : round_trip_plans())  // DeepSpeed refuses cp and ZeRO-2/3 with pp (export_test)
    if (c.plan.strategy.cp == 1 && !(c.plan.strategy.zero >= 2 && c.plan.strategy.pp > 1))
      plans.push_back(c);
  plans.push_back({"llama zero-3", with_cp_zero(make_plan(llama(8), 4, 2, 1, 1, 2, 64), 1, 3)});
  plans.push_back({"gpt zero-2", with_cp_zero(make_plan(gpt(8), 8, 1, 1, 1, 1, 64), 1, 2)});
  ASSERT_EQ(plans.size(), 12u);
  for (const auto& [what, p] : plans) {
    SCOPED_TRACE(what);
    ImportedJob job = import_deepspeed_config(export_deepspeed(p, overlap_stack()), "ds.json");
    EXPECT_EQ(job.strategy.dp, p.strategy.dp);
    EXPECT_EQ(job.strategy.pp, p.strategy.pp);
    EXPECT_EQ(job.strategy.micro_batch, p.strategy.micro_batch);
    EXPECT_EQ(job.strategy.global_batch, p.strategy.global_batch);
    EXPECT_EQ(job.strategy.zero, p.strategy.zero);
    EXPECT_EQ(job.strategy.recompute == Recompute::None, p.strategy.recompute == Recompute::None);
    EXPECT_EQ(*job.stack.precision, strata::costmodel::DType::Bf16);
    EXPECT_EQ(*job.stack.grad_reduce_dtype, strata::costmodel::DType::Fp32);
    EXPECT_FALSE(job.stack.zero_prefetch.has_value());  // DeepSpeed's default: prefetch
    if (p.strategy.zero == 3) {
      // A stack without prefetch: bucket 0, read back as no prefetch.
      ImportedJob off = import_deepspeed_config(export_deepspeed(p, all_gather_stack()), "ds.json");
      EXPECT_EQ(off.strategy.zero, 3);
      EXPECT_EQ(off.stack.zero_prefetch, std::optional<bool>(false));
      EXPECT_EQ(off.stack.zero3_gather_bucket_params, std::optional<double>(0.0));  // nothing coalesced
    }
  }
}

// Stage 3 gathers module by module from DeepSpeed's hooks, with its persistence threshold and
// prefetch bucket (defaults 1e5 and 5e7 elements, or the config's own); other stages keep the
// stack's gathers.
TEST(ImportDeepSpeed, StageThreeGathersModuleByModuleWithItsThresholds) {
  const std::string base =
      R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
          "bf16": {"enabled": true}, "zero_optimization": {"stage": 3)";
  ImportedJob d = import_deepspeed_config(base + "}}", "ds.json");
  EXPECT_EQ(d.stack.zero3_gather, std::optional(strata::costmodel::Zero3Gather::Module));
  EXPECT_EQ(d.stack.zero3_persist_params, std::optional<double>(1e5));
  EXPECT_EQ(d.stack.zero3_gather_bucket_params, std::optional<double>(5e7));
  ImportedJob c = import_deepspeed_config(
      base + R"(, "stage3_param_persistence_threshold": 0, "stage3_prefetch_bucket_size": 2e8}})", "ds.json");
  EXPECT_EQ(c.stack.zero3_persist_params, std::optional<double>(0.0));
  EXPECT_EQ(c.stack.zero3_gather_bucket_params, std::optional<double>(2e8));
  const std::string two =
      R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
          "zero_optimization": {"stage": 2}})";
  EXPECT_FALSE(import_deepspeed_config(two, "ds.json").stack.zero3_gather.has_value());
  try {
    import_deepspeed_config(base + R"(, "stage3_param_persistence_threshold": -1}})", "ds.json");
    ADD_FAILURE() << "a negative threshold was accepted";
  } catch (const strata::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("stage3_param_persistence_threshold"), std::string::npos) << e.what();
  }
}

// A ZeRO-3 plan predicted with per-block gathers is not what DeepSpeed runs: the export says so
// and names the stacks that predict DeepSpeed's module-by-module gathers.
TEST(ExportDeepSpeed, WarnsWhenAZeroThreePlanWasPredictedWithBlockGathers) {
  const Plan z3 = with_cp_zero(make_plan(llama(8), 4, 2, 1, 1, 2, 64), 1, 3);
  const std::string note = deepspeed_zero3_gather_note(z3, overlap_stack());
  EXPECT_NE(note.find("module by module"), std::string::npos) << note;
  EXPECT_NE(note.find("--stack deepspeed-2022-zero3"), std::string::npos) << note;
  EXPECT_EQ(deepspeed_zero3_gather_note(z3, strata::costmodel::load_software_stack("deepspeed-2022-zero3")), "");
  const Plan z1 = with_cp_zero(make_plan(llama(8), 4, 2, 1, 1, 2, 64), 1, 1);
  EXPECT_EQ(deepspeed_zero3_gather_note(z1, overlap_stack()), "");
}

TEST(ImportDeepSpeed, RefusesUnmodelledKeysAndInconsistentBatches) {
  const auto message = [](const std::string& text) {
    try {
      import_deepspeed_config(text, "ds.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string batch = R"("train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4)";
  EXPECT_EQ(message("{" + batch + "}"), "no error");
  EXPECT_EQ(message("{" + batch + R"(, "zero_optimization": {"stage": 3}})"), "no error");
  EXPECT_NE(message("{" + batch + R"(, "zero_optimization": {"stage": 2}, "pipeline": {"stages": 2}})")
                .find("refuses ZeRO-2/3 with pipeline parallelism"),
            std::string::npos);
  EXPECT_NE(message("{" + batch + R"(, "zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": -1}})")
                .find("stage3_prefetch_bucket_size"),
            std::string::npos);
  EXPECT_NE(message("{" + batch + R"(, "sequence_parallel_size": 2})").find("sequence_parallel_size"),
            std::string::npos);
  EXPECT_NE(message(R"({"train_batch_size": 63, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4})")
                .find("63"),
            std::string::npos);
  EXPECT_NE(message("{" + batch).find("not valid JSON"), std::string::npos);
  EXPECT_NE(message(R"({"train_batch_size": 9223372036854775807, "train_micro_batch_size_per_gpu": 4611686018427387904, "gradient_accumulation_steps": 4})")
                .find("train_batch_size must be an integer in [1, "),
            std::string::npos);
  EXPECT_NE(message("{" + batch + R"(, "pipeline": {"stages": 2147483648}})").find("pipeline.stages"),
            std::string::npos);
  // bf16 without data_types accumulates in bf16 (DeepSpeed's default).
  ImportedJob j = import_deepspeed_config(
      "{" + batch + R"(, "bf16": {"enabled": true}, "optimizer": {"type": "AdamW"}})", "ds.json");
  EXPECT_EQ(*j.stack.grad_reduce_dtype, strata::costmodel::DType::Bf16);
  EXPECT_EQ(j.strategy.dp, 8);  // 64 / (2 x 4)
  EXPECT_EQ(j.ignored, std::vector<std::string>{"optimizer"});
}

namespace {

// Export -> import of one plan: the model (but its name), strategy, stage map and world size
// come back.
void expect_round_trip(const Plan& p, const strata::costmodel::SoftwareStack& stack) {
  ImportedJob job = import_megatron_args(export_megatron(p, stack), "args.sh");
  resolve_world_size(job, 0, "args.sh");
  auto model = job.model;
  model.name = p.model.name;
  EXPECT_EQ(model, p.model);
  if (model.moe && p.model.moe) {
    EXPECT_EQ(*model.moe, *p.model.moe);
  }
  EXPECT_EQ(job.strategy, p.strategy);
  EXPECT_EQ(job.stage_layers, p.stage_layers);
  EXPECT_EQ(job.world_size, p.strategy.gpus());
}

}  // namespace

TEST(ImportMegatron, MoeAndMlaPlansComeBackFromTheExport) {
  for (const auto& stack : {overlap_stack(), plain_stack()}) {
    SCOPED_TRACE(stack.name);
    {
      SCOPED_TRACE("mixtral-8x7b tp2 pp4 dp4 ep8");
      expect_round_trip(mixtral_plan(), stack);
    }
    {
      SCOPED_TRACE("deepseek-v3 tp2 pp8 dp32 ep64: MLA, shared expert, 3 dense blocks, sigmoid");
      expect_round_trip(deepseek_plan(), stack);
    }
    {
      SCOPED_TRACE("qwen1.5-moe ep2 x etp2");
      expect_round_trip(qwen_moe_plan(), stack);
    }
    {
      SCOPED_TRACE("gpt moe: top-1 capacity factor 1.25");
      expect_round_trip(capacity_moe_plan(), stack);
    }
  }
  // The DeepSeek-V3 model read back, by hand.
  ImportedJob job = import_megatron_args(export_megatron(deepseek_plan(), overlap_stack()), "a");
  ASSERT_TRUE(job.model.mla && job.model.moe);
  EXPECT_EQ(job.model.mla->q_lora_rank, 1536);
  EXPECT_EQ(job.model.mla->kv_lora_rank, 512);
  EXPECT_EQ(job.model.mla->qk_nope_head_dim, 128);
  EXPECT_EQ(job.model.mla->qk_rope_head_dim, 64);
  EXPECT_EQ(job.model.moe->experts, 256);
  EXPECT_EQ(job.model.moe->first_dense_layers, 3);
  EXPECT_EQ(job.model.moe->shared_experts, 1);
  EXPECT_EQ(job.model.moe->shared_expert_ffn, 2048);
  EXPECT_EQ(job.model.moe->router, strata::models::RouterKind::Sigmoid);
  EXPECT_EQ(job.strategy.ep, 64);
  EXPECT_EQ(job.strategy.etp, 1);
}

TEST(ImportMegatron, Fp8PlansComeBackWithTheirPrecision) {
  // FP8 on a bf16 stack and on an fp16 one: the command trains in bf16 with FP8 GEMMs.
  for (const auto& stack : {overlap_stack(), plain_stack()}) {
    SCOPED_TRACE(stack.name);
    const Plan p = with_fp8(make_plan(llama(8), 2, 2, 2, 1, 1, 16));
    expect_round_trip(p, stack);
    ImportedJob job = import_megatron_args(export_megatron(p, stack), "a");
    EXPECT_EQ(job.strategy.precision, "fp8");
    EXPECT_EQ(*job.stack.precision, strata::costmodel::DType::Bf16);
    EXPECT_EQ(*job.stack.grad_reduce_dtype, strata::costmodel::DType::Fp32);
  }
  // The plan's precision wins over the stack's: fp16 on a bf16 stack exports --fp16.
  Plan fp16 = make_plan(llama(8), 2, 1, 1, 1, 1, 16);
  fp16.strategy.precision = "fp16";
  ImportedJob job = import_megatron_args(export_megatron(fp16, overlap_stack()), "a");
  EXPECT_EQ(*job.stack.precision, strata::costmodel::DType::Fp16);
  EXPECT_EQ(job.strategy.precision, "");
}

TEST(ImportMegatron, ReadsAHandWrittenDeepSeekStyleMoeScript) {
  // Flags as Megatron-LM's own DeepSeek-V3 example writes them (pattern without parentheses,
  // router hyper-parameters, --kv-channels that MLA does not read), on a 2-node job.
  const std::string script = R"(torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py \
    --num-layers 8 --hidden-size 1024 --ffn-hidden-size 4096 --num-attention-heads 16 \
    --kv-channels 128 --seq-length 4096 --max-position-embeddings 4096 \
    --position-embedding-type rope --rotary-base 10000 --normalization RMSNorm --swiglu \
    --disable-bias-linear --untie-embeddings-and-output-weights --vocab-size 32000 \
    --multi-latent-attention --q-lora-rank 384 --kv-lora-rank 128 --qk-head-dim 64 \
    --qk-pos-emb-head-dim 32 --v-head-dim 64 --qk-layernorm \
    --num-experts 16 --moe-layer-freq [0]*2+[1]*6 --moe-ffn-hidden-size 512 \
    --moe-shared-expert-intermediate-size 1024 --moe-router-topk 4 \
    --moe-router-score-function sigmoid --moe-router-enable-expert-bias \
    --moe-router-load-balancing-type seq_aux_loss --moe-aux-loss-coeff 1e-4 \
    --moe-token-dispatcher-type alltoall --moe-grouped-gemm \
    --tensor-model-parallel-size 2 --sequence-parallel --expert-model-parallel-size 4 \
    --expert-tensor-parallel-size 1 --micro-batch-size 1 --global-batch-size 64 \
    --bf16 --fp8-format hybrid --fp8-amax-history-len 1024
)";
  ImportedJob job = import_megatron_args(script, "ds.sh");
  resolve_world_size(job, 0, "ds.sh");
  const auto& m = job.model;
  ASSERT_TRUE(m.mla && m.moe);
  EXPECT_EQ(m.explicit_head_dim, 0);  // --kv-channels: not read by MLA
  EXPECT_EQ(m.mla->q_lora_rank, 384);
  EXPECT_EQ(m.mla->kv_lora_rank, 128);
  EXPECT_EQ(m.mla->qk_nope_head_dim, 64);
  EXPECT_EQ(m.mla->qk_rope_head_dim, 32);
  EXPECT_EQ(m.mla->v_head_dim, 64);
  EXPECT_EQ(m.moe->experts, 16);
  EXPECT_EQ(m.moe->top_k, 4);
  EXPECT_EQ(m.moe->expert_ffn, 512);
  EXPECT_EQ(m.moe->shared_experts, 1);
  EXPECT_EQ(m.moe->shared_expert_ffn, 1024);
  EXPECT_EQ(m.moe->first_dense_layers, 2);
  EXPECT_EQ(m.moe->capacity_factor, 0.0);  // dropless
  EXPECT_EQ(job.strategy.dp, 8);            // 16 / tp 2
  EXPECT_EQ(job.strategy.ep, 4);
  EXPECT_EQ(job.strategy.etp, 1);
  EXPECT_EQ(job.strategy.edp(), 4);  // tp 2 x dp 8 / (ep 4 x etp 1)
  EXPECT_EQ(job.strategy.precision, "fp8");
  EXPECT_EQ(job.ignored, (std::vector<std::string>{"--moe-router-enable-expert-bias",
                                                   "--moe-router-load-balancing-type",
                                                   "--moe-aux-loss-coeff",
                                                   "--fp8-amax-history-len", "--kv-channels"}));
  // Megatron-LM's default expert tensor parallel size is tp.
  ImportedJob etp_default = import_megatron_args(
      "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --vocab-size 1000 "
      "--swiglu --disable-bias-linear --num-experts 4 --tensor-model-parallel-size 2 "
      "--sequence-parallel --moe-token-dispatcher-type alltoall",
      "a");
  EXPECT_EQ(etp_default.strategy.etp, 2);
  EXPECT_EQ(etp_default.model.moe->top_k, 2);          // --moe-router-topk default
  EXPECT_EQ(etp_default.model.moe->expert_ffn, 1024);  // --ffn-hidden-size (4 x 256)
}

TEST(ImportMegatron, RefusesMoeMlaAndFp8SettingsStrataDoesNotModelByName) {
  const std::string base =
      "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 "
      "--vocab-size 1000 --micro-batch-size 1 --position-embedding-type rope ";
  const std::string moe = base + "--num-experts 4 --expert-model-parallel-size 2 ";
  const auto message = [&](const std::string& text) {
    try {
      import_megatron_args(text, "a");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(moe + "--moe-token-dispatcher-type alltoall"), "no error");
  // Megatron-LM's default dispatcher, allgather, whether stated or not.
  EXPECT_EQ(message(moe), "no error");
  EXPECT_EQ(import_megatron_args(moe, "a").stack.moe_dispatcher, strata::costmodel::MoeDispatcher::AllGather);
  EXPECT_EQ(import_megatron_args(moe + "--moe-token-dispatcher-type allgather", "a").stack.moe_dispatcher,
            strata::costmodel::MoeDispatcher::AllGather);
  EXPECT_NE(message(moe + "--moe-token-dispatcher-type ring").find("'ring' is not modelled"), std::string::npos);
  // The flex dispatcher on DeepEP (its default backend) is the once-per-node exchange.
  EXPECT_EQ(message(moe + "--moe-token-dispatcher-type flex"), "no error");
  EXPECT_NE(message(moe + "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep")
                .find("'hybridep' is not modelled"),
            std::string::npos);
  EXPECT_NE(message(moe + "--moe-token-dispatcher-type alltoall --moe-flex-dispatcher-backend deepep")
                .find("needs --moe-token-dispatcher-type flex"),
            std::string::npos);
  EXPECT_NE(message(base + "--expert-model-parallel-size 2").find("needs --num-experts"),
            std::string::npos);
  EXPECT_NE(message(base + "--moe-router-topk 2").find("--moe-router-topk needs --num-experts"),
            std::string::npos);
  EXPECT_NE(message(base + "--num-experts 4 --moe-layer-freq 2").find("'2' is not modelled"),
            std::string::npos);
  EXPECT_NE(message(base + "--num-experts 4 --moe-router-score-function sqrtsoftplus")
                .find("'sqrtsoftplus' is not modelled"),
            std::string::npos);
  EXPECT_NE(message(base + "--num-experts 4 --moe-expert-capacity-factor 1.0")
                .find("without --moe-pad-expert-input-to-capacity"),
            std::string::npos);
  EXPECT_EQ(message(base + "--num-experts 4 --moe-expert-capacity-factor -1"), "no error");  // dropless
  EXPECT_NE(message(base + "--num-experts 4 --moe-router-topk 8").find("exceeds --num-experts"),
            std::string::npos);
  // GELU experts carry biases: Megatron-LM asserts etp 1, whose default is tp.
  EXPECT_NE(message(base + "--num-experts 4 --tensor-model-parallel-size 2 --sequence-parallel "
                           "--moe-token-dispatcher-type alltoall")
                .find("need --expert-tensor-parallel-size 1"),
            std::string::npos);
  EXPECT_EQ(message(base + "--num-experts 4 --tensor-model-parallel-size 2 --sequence-parallel "
                           "--moe-token-dispatcher-type alltoall --expert-tensor-parallel-size 1"),
            "no error");
  EXPECT_NE(message(base + "--q-lora-rank 64").find("--q-lora-rank needs --multi-latent-attention"),
            std::string::npos);
  EXPECT_EQ(message(base + "--qk-layernorm"), "no error");  // per-head Q/K norms (model.qk_norm)
  EXPECT_NE(message(base + "--multi-latent-attention --rope-type yarn").find("'yarn' is not modelled"),
            std::string::npos);
  EXPECT_NE(message(base + "--multi-latent-attention --group-query-attention --num-query-groups 2")
                .find("exclude each other"),
            std::string::npos);
  EXPECT_NE(message(base + "--bf16 --fp8-format hybrid --fp8-recipe mxfp8").find("'mxfp8' is not modelled"),
            std::string::npos);
  EXPECT_NE(message(base + "--fp16 --fp8-format hybrid").find("--fp8-format without --bf16"),
            std::string::npos);
  EXPECT_NE(message(base + "--bf16 --fp8-format e5m2").find("'e5m2' is not hybrid or e4m3"),
            std::string::npos);
  EXPECT_NE(message(base + "--bf16 --fp8-recipe delayed").find("--fp8-recipe needs --fp8-format"),
            std::string::npos);
  EXPECT_NE(message(base + "--bf16 --fp8-format hybrid --fp8-param-gather").find("--fp8-param-gather"),
            std::string::npos);  // FP8 parameters: not modelled
}

// A launch script in the style of Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh:
// variables, arithmetic, arguments in bash arrays over several lines, a batch ramp-up with
// several values, GPT-2 BPE vocabulary and merges files instead of --vocab-size.
TEST(ImportMegatron, ReadsALaunchScriptWithVariablesArraysAndARampUp) {
  const std::string script = R"(#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=1
GPUS_PER_NODE=8
NUM_NODES=64  # 512 GPUs
WORLD_SIZE=$(($GPUS_PER_NODE*$NUM_NODES))
CHECKPOINT_PATH=$1
VOCAB_FILE=$3 #<path>/gpt2-vocab.json
DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes ${NUM_NODES}
)
GPT_MODEL_ARGS=(
    --num-layers 96
    --hidden-size 12288
    --num-attention-heads 96
    --seq-length 2048 --max-position-embeddings 2048
)
TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 1536
    --rampup-batch-size 16 16 5859375
    --step-batch-size-schedule "0:16 2.4B:320 12B:1536"
    --fp16
    --lr 6.0e-5
)
MODEL_PARALLEL_ARGS=( --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 )
DATA_ARGS=(
    --data-path 0.5 $5_a 0.5 $5_b
    --vocab-file $VOCAB_FILE
    --merge-file $4
)
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${GPT_MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} \
    ${DATA_ARGS[@]} \
    --save $CHECKPOINT_PATH
)";
  ImportedJob job = import_megatron_args(script, "gpt3.sh");
  EXPECT_EQ(job.world_size, 512);
  EXPECT_EQ(job.model.layers, 96);
  EXPECT_EQ(job.model.hidden, 12288);
  EXPECT_EQ(job.model.heads, 96);
  EXPECT_EQ(job.model.seq_len, 2048);
  EXPECT_EQ(job.model.vocab, 50257) << "GPT-2 BPE vocabulary from the vocab/merges pair";
  EXPECT_EQ(job.strategy.tp, 8);
  EXPECT_EQ(job.strategy.pp, 16);
  EXPECT_EQ(job.strategy.global_batch, 1536);
  for (const char* f : {"--rampup-batch-size", "--step-batch-size-schedule", "--data-path", "--save"})
    EXPECT_NE(std::find(job.ignored.begin(), job.ignored.end(), f), job.ignored.end()) << f;
  resolve_world_size(job, 0, "gpt3.sh");
  EXPECT_EQ(job.strategy.dp, 4);
  // An explicit --vocab-size wins; another tokenizer without one is still refused by name.
  EXPECT_EQ(import_megatron_args(script + "  --vocab-size 51200\n", "s").model.vocab, 50257)
      << "a flag after the command's last line is not part of it";
  std::string other = script;
  other.replace(other.find("--merge-file $4"), 15, "--tokenizer-type HuggingFaceTokenizer");
  try {
    import_megatron_args(other, "s");
    ADD_FAILURE() << "a tokenizer file without --vocab-size was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--tokenizer-type HuggingFaceTokenizer reads its vocabulary from a file"),
              std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("add --vocab-size"), std::string::npos) << e.what();
  }
  // Tokenizer types whose vocabulary needs no file: TikTokenizer's 2**17, core_r0.8.0's Mistral.
  std::string tik = other;
  tik.replace(tik.find("HuggingFaceTokenizer"), 20, "TikTokenizer");
  EXPECT_EQ(import_megatron_args(tik, "s").model.vocab, 131072);
  std::string mistral = other;
  mistral.replace(mistral.find("HuggingFaceTokenizer"), 20, "MistralTokenizer");
  EXPECT_EQ(import_megatron_args(mistral, "s").model.vocab, 32768);
  // Arithmetic and arrays only where the script defines them; an array that never closes.
  EXPECT_EQ(expand_launch_script("N=2\nM=$(($N*4+1))\npython x.py --a $M\n", "s"), "python x.py --a 9\n");
  EXPECT_EQ(expand_launch_script("python x.py --a $1\n", "s"), "python x.py --a $1\n") << "no assignment: as is";
  EXPECT_THROW(expand_launch_script("A=(\n--x 1\npython x.py ${A[@]}\n", "s"), InputError);
  // "${A[@]}" quoted, as careful scripts write it: one word per element, the same job.
  std::string quoted = script;
  for (const char* arr : {"GPT_MODEL_ARGS", "TRAINING_ARGS", "MODEL_PARALLEL_ARGS", "DISTRIBUTED_ARGS"}) {
    const std::string plain = std::string("${") + arr + "[@]}";
    quoted.replace(quoted.find(plain), plain.size(), "\"" + plain + "\"");
  }
  ImportedJob q = import_megatron_args(quoted, "gpt3.sh");
  EXPECT_EQ(q.model.layers, 96);
  EXPECT_EQ(q.strategy.pp, 16);
  EXPECT_EQ(q.world_size, 512);
  EXPECT_EQ(expand_launch_script("A=(--x \"1 2\" --y)\npython x.py \"${A[@]}\" \"$B\"\n", "s"),
            "python x.py --x \"1 2\" --y \"$B\"\n")
      << "an element's own quotes stay; a quoted unknown scalar stays as written";
}

// Block recompute (the first n blocks of each model chunk) goes out as Megatron-LM's block
// method and comes back; other frameworks refuse it by name.
TEST(ImportMegatron, BlockRecomputeRoundTrips) {
  Plan p = make_plan(llama(8), 2, 2, 2, 1, 1, 16);  // 4 blocks per chunk
  p.strategy.recompute = Recompute::Full;
  p.strategy.recompute_layers = 3;
  ASSERT_TRUE(strata::planner::validate(p.strategy, p.model).empty());
  const std::string args = export_megatron(p, plain_stack());
  EXPECT_NE(args.find("--recompute-method block"), std::string::npos) << args;
  EXPECT_NE(args.find("--recompute-num-layers 3"), std::string::npos) << args;
  EXPECT_EQ(import_megatron_args(args, "a").strategy.recompute_layers, 3);
  p.strategy.recompute_layers = 0;
  EXPECT_NE(export_megatron(p, plain_stack()).find("--recompute-method uniform"), std::string::npos);
}

// The allgather dispatcher goes out and comes back as Megatron-LM's flag says it.
TEST(ImportMegatron, TheAllGatherDispatcherRoundTrips) {
  Plan p = moe_plan(strata::models::load_model("mixtral-8x7b"), 16, 2, 1, 1, 64, 8, 1);
  // A stack that runs the batch-level EP overlap, with the allgather dispatcher instead.
  strata::costmodel::SoftwareStack stack = strata::costmodel::load_software_stack("mcore-2024-deepep");
  ASSERT_TRUE(stack.supports.ep_overlap);
  stack.moe_dispatcher = strata::costmodel::MoeDispatcher::AllGather;
  const std::string args = export_megatron(p, stack);
  EXPECT_NE(args.find("--moe-token-dispatcher-type allgather"), std::string::npos) << args;
  EXPECT_EQ(import_megatron_args(args, "a").stack.moe_dispatcher, strata::costmodel::MoeDispatcher::AllGather);
  // Megatron-Core runs the batch-level EP overlap with the alltoall or flex dispatcher only.
  p.strategy.ep_overlap = true;
  EXPECT_NE(strata::planner::stack_refusal(p.strategy, stack).find("allgather dispatcher"), std::string::npos);
}

// Megatron-Core's recompute modules go out as --recompute-modules, one shell word per module
// as argparse's nargs list reads them, and come back; Megatron-LM's own checks on them
// (TransformerConfig.__post_init__ at d98e8a64) are refused by name.
TEST(ImportMegatron, RecomputeModulesRoundTripAndMegatronsChecksAreRefused) {
  Plan p = mixtral_plan();
  p.strategy.recompute = Recompute::Selective;
  p.strategy.recompute_modules.layernorm = true;
  p.strategy.recompute_modules.moe_act = true;
  const std::string args = export_megatron(p, plain_stack());
  EXPECT_NE(args.find("--recompute-modules layernorm moe_act \\"), std::string::npos) << args;
  ImportedJob job = import_megatron_args(args, "a");
  EXPECT_EQ(job.strategy.recompute, Recompute::Selective);
  EXPECT_EQ(job.strategy.recompute_modules, p.strategy.recompute_modules);
  // strata's selective mode without modules is Megatron's default list (core_attn): no flag.
  Plan plain = mixtral_plan();
  plain.strategy.recompute = Recompute::Selective;
  EXPECT_EQ(export_megatron(plain, plain_stack()).find("--recompute-modules"), std::string::npos);

  const auto error = [](const Plan& q) { return strata::testing::input_error_of([&] { export_megatron(q, plain_stack()); }); };
  Plan dense = make_plan(llama(8), 2, 1, 1, 1, 1, 16);
  dense.strategy.recompute = Recompute::Selective;
  dense.strategy.recompute_modules.moe_act = true;
  EXPECT_NE(error(dense).find("has no experts"), std::string::npos) << error(dense);
  dense.strategy.recompute_modules = {};
  dense.strategy.recompute_modules.mla_up_proj = true;
  EXPECT_NE(error(dense).find("no multi-latent attention"), std::string::npos) << error(dense);
  Plan fp8 = with_fp8(p);
  EXPECT_NE(error(fp8).find("moe_act and layernorm in FP8"), std::string::npos) << error(fp8);
  fp8.strategy.recompute_modules.layernorm = fp8.strategy.recompute_modules.moe_act = false;
  fp8.strategy.recompute_modules.moe = true;  // the whole MoE layer: allowed in FP8
  EXPECT_EQ(error(fp8), "no error");
}

TEST(ImportMegatron, ReadsRecomputeModulesAndTheBatchLevelEpOverlap) {
  const std::string base =
      "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --vocab-size 1000 "
      "--swiglu --disable-bias-linear --num-experts 8 --expert-model-parallel-size 4 "
      "--expert-tensor-parallel-size 1 --moe-token-dispatcher-type alltoall ";
  // Megatron's nargs list: the module names up to the next flag, in any order.
  ImportedJob job = import_megatron_args(
      base + "--recompute-granularity selective --recompute-modules moe_act layernorm "
             "--overlap-moe-expert-parallel-comm --micro-batch-size 1",
      "a");
  EXPECT_EQ(job.strategy.recompute, Recompute::Selective);
  EXPECT_TRUE(job.strategy.recompute_modules.layernorm);
  EXPECT_TRUE(job.strategy.recompute_modules.moe_act);
  EXPECT_FALSE(job.strategy.recompute_modules.core_attn);
  EXPECT_TRUE(job.strategy.ep_overlap);
  EXPECT_FALSE(import_megatron_args(base, "a").strategy.ep_overlap);
  EXPECT_EQ(job.stack.moe_dispatcher, strata::costmodel::MoeDispatcher::AllToAll);  // stated
  // A plan exported for DeepEP with the overlap comes back with both (pp 1: no virtual
  // pipeline needed).
  Plan p = moe_plan(strata::models::load_model("mixtral-8x7b"), 16, 2, 1, 1, 64, 8, 1);
  p.strategy.ep_overlap = true;
  ASSERT_TRUE(strata::planner::validate(p.strategy, p.model).empty());
  const ImportedJob back =
      import_megatron_args(export_megatron(p, strata::costmodel::load_software_stack("mcore-2024-deepep")), "a");
  EXPECT_EQ(back.stack.moe_dispatcher, strata::costmodel::MoeDispatcher::DeepEp);
  EXPECT_TRUE(back.strategy.ep_overlap);
  EXPECT_FALSE(back.strategy.delay_wgrad);
  // --delay-wgrad-compute is read, and goes out again with the plan.
  p.strategy.delay_wgrad = true;
  const ImportedJob delayed =
      import_megatron_args(export_megatron(p, strata::costmodel::load_software_stack("mcore-2024-deepep")), "a");
  EXPECT_TRUE(delayed.strategy.delay_wgrad);
  EXPECT_TRUE(import_megatron_args(base + "--overlap-moe-expert-parallel-comm --delay-wgrad-compute "
                                          "--micro-batch-size 1", "a")
                  .strategy.delay_wgrad);
  const auto error = [&](const std::string& extra) {
    return strata::testing::input_error_of([&] { import_megatron_args(base + extra, "a"); });
  };
  EXPECT_NE(error("--recompute-modules layernorm").find("needs --recompute-granularity selective"),
            std::string::npos);
  EXPECT_NE(error("--recompute-granularity selective --recompute-modules attn_norm").find("attn_norm"),
            std::string::npos);
}
