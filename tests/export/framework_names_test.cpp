// Every flag or key an export writes exists in that framework's configuration at a pinned
// commit, with the right type: the tables in export/frameworks/*.yaml were extracted from the
// frameworks' code (repository + commit in each header), independently of the exporters.
// Values are checked by hand against the plan (tp, pp, vpp, batch sizes, recompute, ZeRO,
// model shape, overlaps).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "export/export_formats.h"
#include "export/safe_text.h"
#include "tests/export/export_checks.h"
#include "tests/export/test_plans.h"

using namespace strata::exports;
using namespace strata::exports::testing;
using strata::planner::Plan;
using strata::planner::Recompute;

namespace {

std::vector<Plan> plans() {
  std::vector<Plan> out;
  Plan a = make_plan(gpt(24), 2, 4, 2, 1, 2, 64);  // GPT, full recompute, ZeRO-1, SP
  a.strategy.zero = 1;
  a.strategy.recompute = Recompute::Full;
  a.strategy.sequence_parallel = true;
  out.push_back(a);
  Plan b = make_plan(llama(32), 2, 2, 4, 2, 1, 64);  // GQA Llama, interleaved, selective
  b.strategy.recompute = Recompute::Selective;
  out.push_back(b);
  Plan c = make_plan(gpt(10), 1, 1, 4, 1, 1, 8);  // uneven first/last
  c.stage_layers = stage_map({1, 4, 4, 1});
  out.push_back(c);
  Plan d = make_plan(gpt(10), 1, 1, 2, 2, 1, 8);  // uneven interleaved: layout
  d.stage_layers = stage_map({2, 3, 3, 2});
  out.push_back(d);
  Plan e = make_plan(llama(8), 8, 1, 1, 1, 2, 64);  // pure data parallel
  e.strategy.rank_order = "tp-pp-dp";
  out.push_back(e);
  return out;
}

// Context parallel and ZeRO-2/3 plans (Megatron-LM and TorchTitan; DeepSpeed refuses cp and
// ZeRO-2/3 with pp).
std::vector<Plan> cp_zero_plans() {
  std::vector<Plan> out;
  Plan f = with_cp_zero(make_plan(llama(8), 2, 2, 2, 1, 1, 16), 2, 3);  // 16 GPUs
  f.strategy.sequence_parallel = true;
  out.push_back(f);
  out.push_back(with_cp_zero(make_plan(gpt(8), 4, 1, 1, 1, 2, 64), 2, 2));  // 8 GPUs
  out.push_back(with_cp_zero(make_plan(gpt(8), 4, 1, 1, 1, 2, 64), 1, 3));
  return out;
}

// MoE, MLA and FP8 plans that Megatron-LM and TorchTitan both run.
std::vector<Plan> moe_fp8_plans() {
  return {mixtral_plan(), deepseek_plan(), qwen_moe_plan(),
          with_fp8(make_plan(llama(8), 2, 2, 2, 1, 1, 16))};
}

std::vector<Plan> all_plans() {
  std::vector<Plan> out = plans();
  for (auto& p : cp_zero_plans()) out.push_back(p);
  for (auto& p : moe_fp8_plans()) out.push_back(p);
  return out;
}

}  // namespace

TEST(MegatronNames, EveryExportedFlagExistsWithItsTypeAtThePinnedCommit) {
  const YAML::Node t = table("megatron_args.yaml");
  EXPECT_EQ(t["source"]["repository"].as<std::string>(), "NVIDIA/Megatron-LM");
  EXPECT_EQ(t["source"]["commit"].as<std::string>().size(), 40u);
  const YAML::Node args = t["args"];
  for (const auto& stack : {overlap_stack(), plain_stack(), all_gather_stack()})
    for (const Plan& p : all_plans()) {
      for (const auto& [flag, value] : megatron_args(p, stack)) expect_arg_type(args, flag, value);
      // The rendered command holds the same arguments (values shell-quoted only when needed).
      const auto rendered = rendered_flags(export_megatron(p, stack));
      EXPECT_EQ(rendered.size(), megatron_args(p, stack).size());
      for (const auto& [flag, value] : megatron_args(p, stack)) EXPECT_EQ(rendered.at(flag), value);
    }
}

TEST(MegatronNames, ValuesReproduceTheInterleavedGqaPlanAndTheStackOverlaps) {
  Plan p = make_plan(llama(32), 2, 2, 4, 2, 1, 64);
  p.model.rope_base = 500000;  // Llama 3's rope_theta: Megatron would build 10000 without the flag
  p.strategy.zero = 1;
  p.strategy.sequence_parallel = true;
  p.strategy.recompute = Recompute::Selective;
  std::map<std::string, std::string> f;
  for (const auto& [k, v] : megatron_args(p, overlap_stack())) f[k] = v;
  const std::map<std::string, std::string> expected = {
      {"--num-layers", "32"}, {"--hidden-size", "1024"}, {"--ffn-hidden-size", "2816"},
      {"--num-attention-heads", "16"}, {"--group-query-attention", ""},
      {"--num-query-groups", "4"}, {"--seq-length", "4096"},
      {"--max-position-embeddings", "4096"}, {"--tokenizer-type", "NullTokenizer"},
      {"--vocab-size", "32000"}, {"--position-embedding-type", "rope"}, {"--rotary-base", "500000"},
      {"--swiglu", ""},
      {"--normalization", "RMSNorm"}, {"--untie-embeddings-and-output-weights", ""},
      {"--disable-bias-linear", ""}, {"--attention-dropout", "0.0"}, {"--hidden-dropout", "0.0"},
      {"--bf16", ""}, {"--attention-backend", "fused"},
      {"--tensor-model-parallel-size", "2"}, {"--pipeline-model-parallel-size", "4"},
      {"--sequence-parallel", ""}, {"--num-layers-per-virtual-pipeline-stage", "4"},  // 32/(4x2)
      {"--micro-batch-size", "1"}, {"--global-batch-size", "64"},
      {"--recompute-granularity", "selective"}, {"--use-distributed-optimizer", ""},
      {"--overlap-grad-reduce", ""}, {"--overlap-param-gather", ""}, {"--tp-comm-overlap", ""}};
  EXPECT_EQ(f, expected);
}

TEST(MegatronNames, OverlapFlagsOnlyWhereMegatronAcceptsThemAndTheStackHasThem) {
  Plan p = make_plan(gpt(24), 2, 4, 2, 1, 2, 64);  // ZeRO 0, no SP
  std::set<std::string> flags;
  for (const auto& [k, v] : megatron_args(p, overlap_stack())) flags.insert(k);
  EXPECT_TRUE(flags.count("--overlap-grad-reduce"));
  EXPECT_FALSE(flags.count("--overlap-param-gather"));  // needs the distributed optimizer
  EXPECT_FALSE(flags.count("--tp-comm-overlap"));       // needs sequence parallelism
  EXPECT_NE(export_megatron(p, overlap_stack()).find("--tp-comm-overlap is left out"),
            std::string::npos);
  flags.clear();
  p.strategy.zero = 1;
  p.strategy.sequence_parallel = true;
  for (const auto& [k, v] : megatron_args(p, plain_stack())) flags.insert(k);
  for (const char* f : {"--overlap-grad-reduce", "--overlap-param-gather", "--tp-comm-overlap", "--bf16"})
    EXPECT_FALSE(flags.count(f)) << f;
  EXPECT_TRUE(flags.count("--fp16"));
  EXPECT_TRUE(flags.count("--accumulate-allreduce-grads-in-fp32"));
  EXPECT_TRUE(flags.count("--decoder-first-pipeline-num-layers") == 0);
  // A Llama-style model runs without dropout; with an unfused-attention stack that charged
  // dropout, the command says the prediction included it.
  Plan l = make_plan(llama(8), 1, 1, 1, 1, 1, 4);
  EXPECT_NE(export_megatron(l, plain_stack()).find("charged the stack's attention dropout (0.1)"),
            std::string::npos);
  EXPECT_EQ(export_megatron(l, overlap_stack()).find("attention dropout"), std::string::npos);
}

TEST(MegatronNames, ContextParallelAndZeroStagesByHand) {
  // Megatron-FSDP's sharding strategies, stage by stage.
  EXPECT_STREQ(megatron_sharding_strategy(0), "no_shard");
  EXPECT_STREQ(megatron_sharding_strategy(1), "optim");
  EXPECT_STREQ(megatron_sharding_strategy(2), "optim_grads");
  EXPECT_STREQ(megatron_sharding_strategy(3), "optim_grads_params");
  EXPECT_EQ(zero_from_megatron_sharding_strategy("optim_grads_params"), 3);
  EXPECT_EQ(zero_from_megatron_sharding_strategy("full_shard"), -1);

  const Plan f = cp_zero_plans()[0];  // llama dp 2 x tp 2 x pp 2 x cp 2, ZeRO-3, SP
  std::map<std::string, std::string> a;
  for (const auto& [k, v] : megatron_args(f, overlap_stack())) a[k] = v;
  EXPECT_EQ(a["--context-parallel-size"], "2");
  EXPECT_EQ(a["--cp-comm-type"], "p2p");
  EXPECT_EQ(a["--tensor-model-parallel-size"], "2");
  EXPECT_EQ(a["--pipeline-model-parallel-size"], "2");
  EXPECT_EQ(a.count("--use-megatron-fsdp"), 1u);
  EXPECT_EQ(a["--data-parallel-sharding-strategy"], "optim_grads_params");
  EXPECT_EQ(a.count("--use-distributed-optimizer"), 1u);
  EXPECT_EQ(a.count("--overlap-param-gather"), 1u);  // dp 2, ZeRO >= 1, both overlaps on
  const std::string cmd = export_megatron(f, overlap_stack());
  // 16 GPUs: 2 nodes of 8; Megatron derives dp = 16 / (tp 2 x pp 2 x cp 2) = 2.
  EXPECT_NE(cmd.find("torchrun --nnodes 2 --nproc_per_node 8"), std::string::npos);
  EXPECT_NE(cmd.find("data parallel size 2 = world size 16 / (tp 2 x pp 2 x cp 2)"),
            std::string::npos);
  std::map<std::string, std::string> g;
  for (const auto& [k, v] : megatron_args(f, all_gather_stack())) g[k] = v;
  EXPECT_EQ(g["--cp-comm-type"], "all_gather");

  std::map<std::string, std::string> z2;
  for (const auto& [k, v] : megatron_args(cp_zero_plans()[1], plain_stack())) z2[k] = v;
  EXPECT_EQ(z2["--data-parallel-sharding-strategy"], "optim_grads");
  // ZeRO-0/1 plans run without Megatron-FSDP, and cp 1 writes no cp flags.
  std::set<std::string> flags;
  for (const auto& [k, v] : megatron_args(plans()[0], overlap_stack())) flags.insert(k);
  for (const char* absent : {"--use-megatron-fsdp", "--data-parallel-sharding-strategy",
                             "--context-parallel-size", "--cp-comm-type"})
    EXPECT_EQ(flags.count(absent), 0u) << absent;
}

TEST(MegatronNames, StageMapsUseFirstLastFlagsOrTheLayout) {
  std::map<std::string, std::string> f;
  Plan c = plans()[2];
  for (const auto& [k, v] : megatron_args(c, plain_stack())) f[k] = v;
  EXPECT_EQ(f["--decoder-first-pipeline-num-layers"], "1");
  EXPECT_EQ(f["--decoder-last-pipeline-num-layers"], "1");
  EXPECT_EQ(f.count("--pipeline-model-parallel-layout"), 0u);
  f.clear();
  // 10 blocks as 2, 3 | 3, 2 on pp 2 x vpp 2 is Megatron-LM's split with the embedding and
  // loss counted (12 / 4 = 3 a chunk): its two flags, no layout string.
  for (const auto& [k, v] : megatron_args(plans()[3], plain_stack())) f[k] = v;
  EXPECT_EQ(f.count("--account-for-embedding-in-pipeline-split"), 1u);
  EXPECT_EQ(f.count("--account-for-loss-in-pipeline-split"), 1u);
  EXPECT_EQ(f.count("--pipeline-model-parallel-layout"), 0u);
  EXPECT_EQ(f.count("--num-layers-per-virtual-pipeline-stage"), 0u);
  // First/last counts with virtual stages: Megatron-LM takes those as a count per rank
  // (first 4, last 6 over 2 chunks of 2, 5, 5, 3 blocks), and the names exist at the pin.
  // The flags of a plan, each checked against Megatron-LM's own argument table.
  const auto checked_args = [](const Plan& plan) {
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : megatron_args(plan, plain_stack())) {
      out[k] = v;
      expect_arg_type(table("megatron_args.yaml")["args"], k, v);
    }
    return out;
  };
  Plan fl = make_plan(gpt(30), 1, 1, 4, 2, 1, 8);
  fl.stage_layers = stage_map({2, 5, 5, 3, 2, 5, 5, 3});
  f = checked_args(fl);
  EXPECT_EQ(f["--decoder-first-pipeline-num-layers"], "4");
  EXPECT_EQ(f["--decoder-last-pipeline-num-layers"], "6");
  EXPECT_EQ(f["--num-virtual-stages-per-pipeline-rank"], "2");
  EXPECT_EQ(f.count("--pipeline-model-parallel-layout"), 0u);
  EXPECT_EQ(f.count("--num-layers-per-virtual-pipeline-stage"), 0u);
  // The embedding and loss counted as layers (22 + 2 = 24 over 4 x 2 chunks of 3; the first
  // and last chunk hold 2): Megatron-LM's two flags, not a layout.
  Plan counted = make_plan(gpt(22), 1, 1, 4, 2, 1, 8);
  counted.stage_layers = stage_map({2, 3, 3, 3, 3, 3, 3, 2});
  f = checked_args(counted);
  EXPECT_EQ(f.count("--account-for-embedding-in-pipeline-split"), 1u);
  EXPECT_EQ(f.count("--account-for-loss-in-pipeline-split"), 1u);
  EXPECT_EQ(f["--num-virtual-stages-per-pipeline-rank"], "2");
  EXPECT_EQ(f.count("--pipeline-model-parallel-layout"), 0u);
  // Middle ranks whose chunks differ are only a layout.
  fl.stage_layers = stage_map({2, 5, 5, 3, 2, 4, 6, 3});
  f.clear();
  for (const auto& [k, v] : megatron_args(fl, plain_stack())) f[k] = v;
  EXPECT_EQ(f["--pipeline-model-parallel-layout"], "E,t*2|t*5|t*5|t*3|t*2|t*4|t*6|t*3,L");
  EXPECT_EQ(f.count("--decoder-first-pipeline-num-layers"), 0u);
  // Rendered with shell quotes: the layout holds '|' and '*'.
  EXPECT_NE(export_megatron(fl, plain_stack()).find("'E,t*2|t*5|t*5|t*3|t*2|t*4|t*6|t*3,L'"), std::string::npos);
}

TEST(MegatronDeepSpeedNames, EveryExportedFlagExistsWithItsType) {
  const YAML::Node t = table("megatron_deepspeed_args.yaml");
  EXPECT_EQ(t["source"]["repository"].as<std::string>(), "deepspeedai/Megatron-DeepSpeed");
  for (const Plan& p : plans())
    for (const auto& [flag, value] : megatron_deepspeed_args(p, overlap_stack()))
      expect_arg_type(t["args"], flag, value);
  std::map<std::string, std::string> f;
  Plan a = plans()[0];
  for (const auto& [k, v] : megatron_deepspeed_args(a, overlap_stack())) f[k] = v;
  EXPECT_EQ(f["--tensor-model-parallel-size"], "4");
  EXPECT_EQ(f["--pipeline-model-parallel-size"], "2");
  EXPECT_EQ(f["--zero-stage"], "1");
  EXPECT_EQ(f["--deepspeed_config"], "ds_config.json");
  EXPECT_EQ(f["--recompute-granularity"], "full");
}

TEST(DeepSpeedNames, EveryKeyIsReadByDeepSpeedWithItsTypeAndBatchesAreConsistent) {
  const YAML::Node t = table("deepspeed_config.yaml");
  const YAML::Node sec = t["sections"];
  const auto check_type = [](const std::string& type, const nlohmann::json& v, const std::string& k) {
    if (type == "int") { EXPECT_TRUE(v.is_number_integer()) << k; }
    else if (type == "bool") { EXPECT_TRUE(v.is_boolean()) << k; }
    else if (type == "str") { EXPECT_TRUE(v.is_string()) << k; }
    else if (type == "float") { EXPECT_TRUE(v.is_number()) << k; }
    else if (type == "table") { EXPECT_TRUE(v.is_object()) << k; }
  };
  for (const auto& stack : {overlap_stack(), plain_stack()})
    for (const Plan& p : plans()) {
      const auto j = nlohmann::json::parse(export_deepspeed(p, stack));
      for (const auto& [key, value] : j.items()) {
        ASSERT_TRUE(sec["top_level"][key]) << key << " is not a DeepSpeed config key";
        check_type(sec["top_level"][key].as<std::string>(), value, key);
        if (!value.is_object()) continue;
        ASSERT_TRUE(sec[key]) << key;
        for (const auto& [k2, v2] : value.items()) {
          ASSERT_TRUE(sec[key][k2]) << key << "." << k2 << " is not read by DeepSpeed";
          check_type(sec[key][k2].as<std::string>(), v2, key + "." + k2);
        }
      }
      const auto& s = p.strategy;
      EXPECT_EQ(j["train_batch_size"].get<std::int64_t>(),
                j["train_micro_batch_size_per_gpu"].get<std::int64_t>() *
                    j["gradient_accumulation_steps"].get<std::int64_t>() * s.dp);
      EXPECT_EQ(j["zero_optimization"]["stage"], s.zero);
      EXPECT_EQ(j["data_types"]["grad_accum_dtype"], "fp32");
      EXPECT_FALSE(j.contains("tensor_parallel"));
    }
  // By hand: plan a is gb 64 = mb 2 x 16 accumulation x dp 2, ZeRO-1, pp 2, full recompute.
  const auto j = nlohmann::json::parse(export_deepspeed(plans()[0], overlap_stack()));
  EXPECT_EQ(j["train_batch_size"], 64);
  EXPECT_EQ(j["train_micro_batch_size_per_gpu"], 2);
  EXPECT_EQ(j["gradient_accumulation_steps"], 16);
  EXPECT_EQ(j["zero_optimization"]["stage"], 1);
  EXPECT_EQ(j["pipeline"]["stages"], 2);
  EXPECT_EQ(j["pipeline"]["activation_checkpoint_interval"], 1);
  EXPECT_EQ(j["bf16"]["enabled"], true);
}

TEST(DeepSpeedNames, ZeroStages2And3AndRefusalsOfWhatDeepSpeedCannotRun) {
  const YAML::Node zero = table("deepspeed_config.yaml")["sections"]["zero_optimization"];
  const Plan z3 = cp_zero_plans()[2];  // gpt dp 4, pp 1, ZeRO-3
  for (const auto& stack : {overlap_stack(), all_gather_stack()}) {
    const auto j = nlohmann::json::parse(export_deepspeed(z3, stack));
    for (const auto& [k, v] : j["zero_optimization"].items())
      EXPECT_TRUE(zero[k]) << k << " is not read by DeepSpeed";
    EXPECT_EQ(j["zero_optimization"]["stage"], 3);
    // Prefetch is DeepSpeed's default; a stack without it gets a bucket of 0.
    EXPECT_EQ(j["zero_optimization"].contains("stage3_prefetch_bucket_size"), !stack.zero_prefetch);
    if (!stack.zero_prefetch) { EXPECT_EQ(j["zero_optimization"]["stage3_prefetch_bucket_size"], 0); }
  }
  const auto error = [](const Plan& p, ExportTarget t) {
    try {
      export_plan(p, overlap_stack(), t);
    } catch (const strata::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (auto t : {ExportTarget::DeepSpeed, ExportTarget::MegatronDeepSpeed}) {
    EXPECT_NE(error(cp_zero_plans()[1], t).find("context parallelism (cp 2)"), std::string::npos);
    EXPECT_NE(error(with_cp_zero(plans()[0], 1, 2), t).find("ZeRO-2 with pipeline parallelism (pp 2)"),
              std::string::npos);
    EXPECT_EQ(error(z3, t), "no error");
  }
}

TEST(TorchTitanNames, EveryKeyExistsInTheReleaseWithItsType) {
  const YAML::Node t = table("torchtitan_config.yaml");
  EXPECT_EQ(t["source"]["release"].as<std::string>(), "v0.2.2");
  for (const auto& stack : {overlap_stack(), all_gather_stack()})
    for (const Plan& p : all_plans())
      for (const auto& [section, kv] : toml_sections(export_torchtitan(p, stack))) {
        ASSERT_TRUE(t["sections"][section]) << section;
        for (const auto& [k, v] : kv) {
          ASSERT_TRUE(t["sections"][section][k]) << section << "." << k;
          const std::string type = t["sections"][section][k].as<std::string>();
          if (type == "int") { EXPECT_TRUE(is_int(v)) << k << " = " << v; }
          else if (type == "str") { EXPECT_EQ(v.front(), '"') << k; }
          else if (type.rfind("list", 0) == 0) { EXPECT_EQ(v.front(), '[') << k; }
        }
      }
}

TEST(TorchTitanNames, ModelPartsFollowThePlansStageMapAndSchedule) {
  Plan p = make_plan(llama(8), 2, 2, 2, 2, 1, 32);  // 4 virtual stages of 2 layers
  auto t = toml_sections(export_torchtitan(p, overlap_stack()));
  EXPECT_EQ(t["parallelism"]["pipeline_parallel_schedule"], "\"Interleaved1F1B\"");
  EXPECT_EQ(t["parallelism"]["pipeline_parallel_degree"], "2");
  EXPECT_EQ(t["parallelism"]["module_fqns_per_model_part"],
            "[  [\"tok_embeddings\", \"layers.0\", \"layers.1\"],  [\"layers.2\", \"layers.3\"],"
            "  [\"layers.4\", \"layers.5\"],  [\"layers.6\", \"layers.7\", \"norm\", \"output\"],]");
  EXPECT_EQ(t["parallelism"].count("pipeline_parallel_split_points"), 0u);
  EXPECT_EQ(t["training"]["local_batch_size"], "16");  // 32 / dp 2, split into micro-batches of 1
  Plan u = plans()[2];  // 1, 4, 4, 1 blocks
  EXPECT_EQ(torchtitan_module_fqns(u).front(),
            (std::vector<std::string>{"tok_embeddings", "layers.0"}));
  EXPECT_EQ(torchtitan_module_fqns(u).back(),
            (std::vector<std::string>{"layers.9", "norm", "output"}));
  EXPECT_NE(export_torchtitan(u, overlap_stack()).find("TorchTitan v0.2.2"), std::string::npos);
}

TEST(TorchTitanNames, ZeroThreeShardsZeroZeroReplicatesAndCpSetsItsDegree) {
  const Plan f = cp_zero_plans()[0];  // llama dp 2 x tp 2 x pp 2 x cp 2, ZeRO-3
  auto t = toml_sections(export_torchtitan(f, overlap_stack()))["parallelism"];
  EXPECT_EQ(t["data_parallel_shard_degree"], "2");
  EXPECT_EQ(t["data_parallel_replicate_degree"], "1");
  EXPECT_EQ(t["context_parallel_degree"], "2");
  EXPECT_EQ(t["context_parallel_rotate_method"], "\"alltoall\"");  // the ring: strata's p2p
  EXPECT_EQ(t["fsdp_reshard_after_forward"], "\"always\"");       // pp 2 would keep them
  auto g = toml_sections(export_torchtitan(f, all_gather_stack()))["parallelism"];
  EXPECT_EQ(g["context_parallel_rotate_method"], "\"allgather\"");
  // ZeRO-0, data parallel only: DDP replicas.
  auto d = toml_sections(export_torchtitan(plans()[4], overlap_stack()))["parallelism"];
  EXPECT_EQ(d["data_parallel_replicate_degree"], "8");
  EXPECT_EQ(d["data_parallel_shard_degree"], "1");
  EXPECT_EQ(d.count("context_parallel_degree"), 0u);
  EXPECT_EQ(d.count("fsdp_reshard_after_forward"), 0u);
  // ZeRO-2 has no TorchTitan equivalent: FSDP, and the file says so.
  const std::string z2 = export_torchtitan(cp_zero_plans()[1], overlap_stack());
  EXPECT_NE(z2.find("# TorchTitan has no ZeRO-2"), std::string::npos);
  EXPECT_EQ(toml_sections(z2)["parallelism"]["data_parallel_shard_degree"], "4");
  EXPECT_EQ(export_torchtitan(f, overlap_stack()).find("has no ZeRO"), std::string::npos);
}

TEST(ExportEscaping, ANameWithANewlineStaysInsideItsCommentInEveryOutput) {
  Plan p = make_plan(gpt(8), 2, 1, 2, 1, 1, 8);
  p.model.name = "evil\n--inject 1\n[training]\nx = \"\\";
  p.cluster = "c\r\x01";
  for (auto target : {ExportTarget::Megatron, ExportTarget::MegatronDeepSpeed,
                      ExportTarget::TorchTitan, ExportTarget::DeepSpeed}) {
    const std::string out = export_plan(p, overlap_stack(), target);
    if (const auto pos = out.find("--inject"); pos != std::string::npos) {
      EXPECT_EQ(out.substr(pos - 2, 2), "\\n") << out;  // only as an escaped newline
    EXPECT_EQ(out.find('\r'), std::string::npos);
    }
    EXPECT_EQ(out.find('\x01'), std::string::npos);
    std::istringstream in(out);
    std::string line;
    int training_sections = 0;
    while (std::getline(in, line)) training_sections += line == "[training]";
    EXPECT_LE(training_sections, 1);
  }
  const auto f = rendered_flags(export_megatron(p, overlap_stack()));
  EXPECT_EQ(f.count("--inject"), 0u);
}

TEST(ExportEscaping, TomlStringsEscapeQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(toml_string("a\"b\\c\nd\x01"), "\"a\\\"b\\\\c\\nd\\u0001\"");
  EXPECT_EQ(toml_string("layers.0"), "\"layers.0\"");
}

TEST(MegatronNames, DeepSeekV3FlagsByHand) {
  const auto f = arg_map(megatron_args(deepseek_plan(), overlap_stack()));
  // config.json: n_routed_experts 256, num_experts_per_tok 8, moe_intermediate_size 2048,
  // n_shared_experts 1 (x 2048), first_k_dense_replace 3 of 61, scoring_func sigmoid;
  // q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128.
  const std::map<std::string, std::string> expected = {
      {"--num-experts", "256"}, {"--moe-router-topk", "8"}, {"--moe-ffn-hidden-size", "2048"},
      {"--moe-shared-expert-intermediate-size", "2048"}, {"--moe-layer-freq", "([0]*3+[1]*58)"},
      {"--moe-router-score-function", "sigmoid"}, {"--moe-token-dispatcher-type", "alltoall"},
      {"--moe-grouped-gemm", ""}, {"--expert-model-parallel-size", "64"},
      {"--expert-tensor-parallel-size", "1"}, {"--multi-latent-attention", ""},
      {"--q-lora-rank", "1536"}, {"--kv-lora-rank", "512"}, {"--qk-head-dim", "128"},
      {"--qk-pos-emb-head-dim", "64"}, {"--v-head-dim", "128"}, {"--qk-layernorm", ""},
      {"--rope-type", "rope"}, {"--ffn-hidden-size", "18432"}, {"--num-layers", "61"},
      {"--tensor-model-parallel-size", "2"}, {"--pipeline-model-parallel-size", "8"},
      {"--sequence-parallel", ""}};
  for (const auto& [k, v] : expected) {
    ASSERT_EQ(f.count(k), 1u) << k;
    EXPECT_EQ(f.at(k), v) << k;
  }
  for (const char* absent : {"--group-query-attention", "--num-query-groups", "--kv-channels",
                             "--moe-expert-capacity-factor", "--moe-router-pre-softmax",
                             "--fp8-format"})
    EXPECT_EQ(f.count(absent), 0u) << absent;
  // The layer pattern holds shell metacharacters: quoted in the command.
  EXPECT_NE(export_megatron(deepseek_plan(), overlap_stack()).find("--moe-layer-freq '([0]*3+[1]*58)'"),
            std::string::npos);
}

TEST(MegatronNames, MixtralQwenAndCapacityFlagsByHand) {
  const auto x = arg_map(megatron_args(mixtral_plan(), overlap_stack()));
  EXPECT_EQ(x.at("--num-experts"), "8");
  EXPECT_EQ(x.at("--moe-router-topk"), "2");
  EXPECT_EQ(x.at("--moe-ffn-hidden-size"), "14336");
  EXPECT_EQ(x.at("--moe-router-score-function"), "softmax");
  EXPECT_EQ(x.at("--expert-model-parallel-size"), "8");
  EXPECT_EQ(x.at("--expert-tensor-parallel-size"), "1");  // Megatron's default would be tp 2
  EXPECT_EQ(x.at("--num-query-groups"), "8");
  EXPECT_EQ(x.at("--rotary-base"), "1000000");
  for (const char* absent : {"--moe-layer-freq", "--moe-shared-expert-intermediate-size",
                             "--multi-latent-attention", "--qk-layernorm"})
    EXPECT_EQ(x.count(absent), 0u) << absent;
  const auto q = arg_map(megatron_args(qwen_moe_plan(), overlap_stack()));
  EXPECT_EQ(q.at("--moe-shared-expert-intermediate-size"), "5632");  // 1 x 5632
  EXPECT_EQ(q.at("--num-experts"), "60");
  EXPECT_EQ(q.at("--moe-router-topk"), "4");
  EXPECT_EQ(q.at("--expert-model-parallel-size"), "2");
  EXPECT_EQ(q.at("--expert-tensor-parallel-size"), "2");
  const auto c = arg_map(megatron_args(capacity_moe_plan(), plain_stack()));
  EXPECT_EQ(c.at("--moe-expert-capacity-factor"), "1.25");
  EXPECT_EQ(c.count("--moe-pad-expert-input-to-capacity"), 1u);
  EXPECT_EQ(c.count("--moe-router-pre-softmax"), 1u);  // top-1 softmax: Megatron requires it
  // Dense plans write no expert flags.
  const auto d = arg_map(megatron_args(plans()[1], overlap_stack()));
  for (const char* absent : {"--num-experts", "--expert-model-parallel-size",
                             "--expert-tensor-parallel-size", "--moe-token-dispatcher-type"})
    EXPECT_EQ(d.count(absent), 0u) << absent;
  // Megatron's experts take biases only with etp 1.
  Plan biased = capacity_moe_plan();
  biased.strategy.etp = 2;
  biased.strategy.ep = 2;
  EXPECT_NE(export_error(biased, ExportTarget::Megatron).find("only with expert tensor parallel size 1"),
            std::string::npos);
}

TEST(MegatronNames, Fp8WritesTheDelayedHybridRecipeOnBf16) {
  const Plan p = with_fp8(make_plan(llama(8), 2, 2, 2, 1, 1, 16));
  for (const auto& stack : {overlap_stack(), plain_stack()}) {  // bf16 and fp16 stacks
    const auto f = arg_map(megatron_args(p, stack));
    EXPECT_EQ(f.at("--fp8-format"), "hybrid");
    EXPECT_EQ(f.at("--fp8-recipe"), "delayed");
    EXPECT_EQ(f.count("--bf16"), 1u);
    EXPECT_EQ(f.count("--fp16"), 0u);
    EXPECT_EQ(f.count("--accumulate-allreduce-grads-in-fp32"), 0u);  // bf16 does it itself
    for (const char* absent : {"--fp8-dot-product-attention", "--fp8-output-proj",
                               "--first-last-layers-bf16", "--fp8-param-gather"})
      EXPECT_EQ(f.count(absent), 0u) << absent;
  }
  EXPECT_EQ(arg_map(megatron_args(plans()[1], overlap_stack())).count("--fp8-format"), 0u);
}

TEST(MegatronDeepSpeedNames, MoeFlagsExistAndRefusalsNameWhatDeepSpeedLacks) {
  // Mixtral with tp 2 x dp 8, ep 8 x etp 2: DeepSpeed's expert groups inside dp 8, experts
  // tensor-parallel over the whole tp group.
  Plan p = moe_plan(strata::models::load_model("mixtral-8x7b"), 8, 2, 1, 1, 64, 8, 2);
  const YAML::Node t = table("megatron_deepspeed_args.yaml");
  for (const auto& [flag, value] : megatron_deepspeed_args(p, overlap_stack()))
    expect_arg_type(t["args"], flag, value);
  const auto f = arg_map(megatron_deepspeed_args(p, overlap_stack()));
  EXPECT_EQ(f.at("--num-experts"), "8");
  EXPECT_EQ(f.at("--expert-interval"), "1");  // every block sparse
  EXPECT_EQ(f.at("--topk"), "2");
  EXPECT_EQ(f.at("--moe-expert-parallel-size"), "8");
  EXPECT_EQ(f.at("--mlp-type"), "standard");
  EXPECT_EQ(f.count("--enable-expert-tensor-parallelism"), 1u);
  EXPECT_EQ(f.count("--disable-moe-token-dropping"), 1u);  // dropless
  EXPECT_EQ(f.count("--disable-moe-top2-2nd-expert-sampling"), 1u);
  EXPECT_EQ(f.count("--create-moe-param-group"), 0u);  // ZeRO 0
  // The DeepSpeed config itself has no expert keys; the note names the model-code layer.
  EXPECT_EQ(export_error(p, ExportTarget::DeepSpeed), "no error");
  const std::string note = deepspeed_model_code_note(p);
  EXPECT_NE(note.find("deepspeed.moe.layer.MoE(hidden_size=4096"), std::string::npos);
  EXPECT_NE(note.find("num_experts=8, ep_size=8, k=2, drop_tokens=False, "
                      "enable_expert_tensor_parallelism=True"),
            std::string::npos);
  EXPECT_EQ(deepspeed_model_code_note(plans()[0]), "");
  // Refused by name.
  for (auto target : {ExportTarget::DeepSpeed, ExportTarget::MegatronDeepSpeed}) {
    EXPECT_NE(export_error(deepseek_plan(), target).find("routes with a sigmoid"), std::string::npos);
    EXPECT_NE(export_error(qwen_moe_plan(), target).find("1 shared expert(s)"), std::string::npos);
    EXPECT_NE(export_error(mixtral_plan(), target).find("ep 8 does not divide dp 4"), std::string::npos);
    EXPECT_NE(export_error(with_fp8(plans()[4]), target).find("trains in FP8"), std::string::npos);
    Plan etp1 = p;
    etp1.strategy.etp = 1;
    EXPECT_NE(export_error(etp1, target).find("replicate every expert over the tp group"),
              std::string::npos);
  }
  EXPECT_NE(export_error(capacity_moe_plan(), ExportTarget::MegatronDeepSpeed)
                .find("experts 2048 wide (moe.expert_ffn) and a dense MLP 4096 wide"),
            std::string::npos);
  EXPECT_EQ(export_error(capacity_moe_plan(), ExportTarget::DeepSpeed), "no error");
}

TEST(TorchTitanNames, ExpertDegreesAndTheFloat8ConverterByHand) {
  auto x = toml_sections(export_torchtitan(mixtral_plan(), overlap_stack()));
  EXPECT_EQ(x["parallelism"]["expert_parallel_degree"], "8");
  EXPECT_EQ(x["parallelism"]["expert_tensor_parallel_degree"], "1");
  EXPECT_EQ(x["parallelism"]["data_parallel_shard_degree"], "4");
  EXPECT_EQ(x.count("quantize.linear.float8"), 0u);
  auto q = toml_sections(export_torchtitan(qwen_moe_plan(), overlap_stack()));
  EXPECT_EQ(q["parallelism"]["expert_tensor_parallel_degree"], "2");  // etp = tp
  // ZeRO-0 data parallel with experts: FSDP (TorchTitan folds experts over its shard ranks).
  Plan ddp = moe_plan(strata::models::load_model("mixtral-8x7b"), 8, 1, 1, 1, 64, 8, 1);
  auto d = toml_sections(export_torchtitan(ddp, overlap_stack()));
  EXPECT_EQ(d["parallelism"]["data_parallel_shard_degree"], "8");
  EXPECT_EQ(d["parallelism"]["data_parallel_replicate_degree"], "1");
  EXPECT_NE(export_torchtitan(deepseek_plan(), overlap_stack()).find("the first 3 layers dense"),
            std::string::npos);

  auto f = toml_sections(export_torchtitan(with_fp8(make_plan(llama(8), 2, 2, 2, 1, 1, 16)),
                                           plain_stack()));
  EXPECT_EQ(f["model"]["converters"], "[\"quantize.linear.float8\"]");
  EXPECT_EQ(f["quantize.linear.float8"]["recipe_name"], "\"tensorwise\"");
  EXPECT_EQ(f["quantize.linear.float8"]["filter_fqns"], "[\"output\"]");  // LM head in bf16
  EXPECT_EQ(f["compile"]["enable"], "true");
  EXPECT_EQ(f["training"]["mixed_precision_param"], "\"bfloat16\"");  // not the fp16 stack's

  EXPECT_NE(export_error(capacity_moe_plan(), ExportTarget::TorchTitan).find("dropless"),
            std::string::npos);
  Plan etp = moe_plan(strata::models::load_model("mixtral-8x7b"), 8, 4, 1, 1, 64, 2, 2);
  EXPECT_NE(export_error(etp, ExportTarget::TorchTitan).find("neither 1 nor tp 4"), std::string::npos);
}

TEST(ExportRefusals, RecomputeModulesAreMegatronsOwn) {
  // A plan that recomputes Megatron-Core modules (strategy.recompute_modules) would run a
  // different job without them: only the Megatron-LM export writes them, the others refuse
  // them by name.
  Plan p = mixtral_plan();
  p.strategy.recompute = strata::planner::Recompute::Selective;
  p.strategy.recompute_modules.moe = true;
  EXPECT_EQ(export_error(p, ExportTarget::Megatron), "no error");
  for (auto target : {ExportTarget::DeepSpeed, ExportTarget::MegatronDeepSpeed, ExportTarget::TorchTitan}) {
    const std::string e = export_error(p, target);
    EXPECT_NE(e.find("strategy.recompute_modules [moe]"), std::string::npos) << to_string(target) << e;
    EXPECT_NE(e.find("--to megatron"), std::string::npos) << e;
  }
}

// TorchTitan's per-op policy (a torchtitan stack's selective recompute) is TorchTitan's
// selective_ac_option "op": only that export writes it, the others refuse it by name; a plan
// whose selective recompute is strata's attention-core mode is written as "op" too, with a
// comment that the two differ.
TEST(ExportRefusals, PerOpRecomputeIsTorchTitansOwn) {
  Plan p = make_plan(llama(8), 2, 1, 1, 1, 1, 32);
  p.strategy.recompute = strata::planner::Recompute::Selective;
  const std::string core = export_torchtitan(p, overlap_stack());
  EXPECT_NE(core.find("selective_ac_option = \"op\""), std::string::npos);
  EXPECT_NE(core.find("re-runs the attention core"), std::string::npos);
  p.strategy.recompute_modules.per_op = true;
  const std::string per_op = export_torchtitan(p, overlap_stack());
  EXPECT_NE(per_op.find("selective_ac_option = \"op\""), std::string::npos);
  EXPECT_EQ(per_op.find("re-runs the attention core"), std::string::npos);
  for (auto target : {ExportTarget::Megatron, ExportTarget::DeepSpeed, ExportTarget::MegatronDeepSpeed})
    EXPECT_NE(export_error(p, target).find("per-op policy"), std::string::npos) << to_string(target);
}
