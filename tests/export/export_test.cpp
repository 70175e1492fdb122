// strata export: the emitted Megatron-LM arguments, DeepSpeed config keys and TorchTitan TOML
// keys are exactly the documented names expected for each plan, with values derived from
// the plan; a bad --to is a usage error (exit 2, one `error:` line).
#include "export/export_formats.h"
#include "common/json_text.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/atomic_file.h"
#include "common/errors.h"

using namespace strata::cli;
using namespace strata::exports;
using strata::planner::Plan;
using strata::planner::Recompute;
using strata::planner::ScheduleKind;

namespace {

// Megatron-LM flag names, as defined in megatron/training/arguments.py
// (github.com/NVIDIA/Megatron-LM: _add_network_size_args, _add_training_args,
// _add_distributed_args) and the "Custom Pipeline Model Parallel Layout" page
// (docs.nvidia.com/megatron/parallelism-guide/pipeline-parallel-layout).
const std::set<std::string> kMegatronDocumented = {
    "--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads",
    "--group-query-attention", "--num-query-groups", "--seq-length", "--max-position-embeddings",
    "--position-embedding-type", "--swiglu", "--normalization",
    "--untie-embeddings-and-output-weights", "--tensor-model-parallel-size",
    "--pipeline-model-parallel-size", "--sequence-parallel", "--use-tp-pp-dp-mapping",
    "--num-layers-per-virtual-pipeline-stage", "--decoder-first-pipeline-num-layers",
    "--decoder-last-pipeline-num-layers", "--pipeline-model-parallel-layout", "--micro-batch-size",
    "--global-batch-size", "--recompute-granularity", "--recompute-method",
    "--recompute-num-layers", "--use-distributed-optimizer", "--bf16"};

// DeepSpeed config keys: deepspeed.ai/docs/config-json (train_batch_size,
// train_micro_batch_size_per_gpu, gradient_accumulation_steps, bf16.enabled,
// zero_optimization.stage, activation_checkpointing.*), deepspeed/runtime/config.py
// get_pipeline_config ("pipeline": stages, activation_checkpoint_interval) and
// deepspeed.ai/tutorials/autotp-training ("tensor_parallel": {"autotp_size"}); plus our own
// clearly named "strata_plan" section.
const std::set<std::string> kDeepSpeedDocumented = {
    "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "bf16",
    "zero_optimization", "pipeline", "tensor_parallel", "activation_checkpointing", "strata_plan"};

// TorchTitan job config: torchtitan/config/job_config.py (github.com/pytorch/torchtitan),
// dataclasses Training, Parallelism and ActivationCheckpoint.
const std::map<std::string, std::set<std::string>> kTorchTitanDocumented = {
    {"training", {"local_batch_size", "global_batch_size", "seq_len", "mixed_precision_param"}},
    {"parallelism",
     {"data_parallel_replicate_degree", "data_parallel_shard_degree", "tensor_parallel_degree",
      "pipeline_parallel_degree", "pipeline_parallel_schedule", "pipeline_parallel_microbatch_size",
      "pipeline_parallel_split_points"}},
    {"activation_checkpoint", {"mode", "selective_ac_option"}}};

strata::models::ModelSpec gpt(int layers) {
  strata::models::ModelSpec m;
  m.name = "gpt-test";
  m.layers = layers;
  m.hidden = 1024;
  m.heads = 16;
  m.kv_heads = 16;
  m.ffn = 4096;
  m.vocab = 50257;
  m.seq_len = 2048;
  return m;
}

strata::models::ModelSpec llama(int layers) {
  strata::models::ModelSpec m = gpt(layers);
  m.name = "llama-test";
  m.kv_heads = 4;
  m.ffn = 2816;
  m.vocab = 32000;
  m.seq_len = 4096;
  m.activation = strata::models::Activation::SwiGlu;
  m.norm = strata::models::Norm::RmsNorm;
  m.positions = strata::models::Positions::Rope;
  m.tied_embeddings = false;
  return m;
}

Plan make_plan(strata::models::ModelSpec m, int dp, int tp, int pp, int vpp, std::int64_t mb,
               std::int64_t gb) {
  Plan p;
  p.model = std::move(m);
  p.cluster = "dgx-a100";
  p.strategy.dp = dp;
  p.strategy.tp = tp;
  p.strategy.pp = pp;
  p.strategy.vpp = vpp;
  p.strategy.micro_batch = mb;
  p.strategy.global_batch = gb;
  p.strategy.schedule = vpp > 1 ? ScheduleKind::Interleaved : ScheduleKind::OneFOneB;
  p.stage_layers = strata::planner::even_stage_layers(p.model, pp, vpp);
  strata::planner::require_valid(p.strategy, p.model);
  strata::planner::check_stage_layers(p.stage_layers, p.model, pp, vpp);
  return p;
}

// Stage map with the given blocks per virtual stage (embedding first, head last).
std::vector<std::vector<int>> stage_map(const std::vector<int>& blocks) {
  std::vector<std::vector<int>> out;
  int next = 1;
  for (std::size_t v = 0; v < blocks.size(); ++v) {
    std::vector<int> s;
    if (v == 0) s.push_back(0);
    for (int i = 0; i < blocks[v]; ++i) s.push_back(next++);
    if (v + 1 == blocks.size()) s.push_back(next);
    out.push_back(s);
  }
  return out;
}

// Flag -> value ("" for switches) of the argument lines; comment lines skipped.
std::map<std::string, std::string> megatron_flags(const std::string& text) {
  std::map<std::string, std::string> flags;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.size() >= 2 && line.compare(line.size() - 2, 2, " \\") == 0)
      line.resize(line.size() - 2);
    EXPECT_EQ(line.rfind("--", 0), 0u) << "not an argument line: " << line;
    const auto sp = line.find(' ');
    const std::string name = line.substr(0, sp);
    EXPECT_EQ(flags.count(name), 0u) << "repeated " << name;
    flags[name] = sp == std::string::npos ? "" : line.substr(sp + 1);
  }
  return flags;
}

std::set<std::string> keys_of(const std::map<std::string, std::string>& m) {
  std::set<std::string> k;
  for (const auto& [a, b] : m) k.insert(a);
  return k;
}

// Minimal TOML reader for our output: [section] and key = value lines.
std::map<std::string, std::map<std::string, std::string>> toml_sections(const std::string& text) {
  std::map<std::string, std::map<std::string, std::string>> out;
  std::istringstream in(text);
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      EXPECT_EQ(out.count(section), 0u) << "repeated section " << section;
      out[section];
      continue;
    }
    const auto eq = line.find(" = ");
    EXPECT_NE(eq, std::string::npos) << line;
    std::string value = line.substr(eq + 3);
    if (auto c = value.find("  #"); c != std::string::npos) value.resize(c);
    out[section][line.substr(0, eq)] = value;
  }
  return out;
}

}  // namespace

TEST(ExportMegatron, DenseGptPlanEmitsExactlyTheExpectedFlags) {
  Plan p = make_plan(gpt(24), 2, 4, 2, 1, 2, 64);
  p.strategy.zero = 1;
  p.strategy.recompute = Recompute::Full;
  p.strategy.sequence_parallel = true;
  auto f = megatron_flags(export_megatron(p));
  EXPECT_EQ(keys_of(f),
            (std::set<std::string>{"--num-layers", "--hidden-size", "--ffn-hidden-size",
                                   "--num-attention-heads", "--seq-length",
                                   "--max-position-embeddings", "--tensor-model-parallel-size",
                                   "--pipeline-model-parallel-size", "--sequence-parallel",
                                   "--micro-batch-size", "--global-batch-size",
                                   "--recompute-granularity", "--recompute-method",
                                   "--recompute-num-layers", "--use-distributed-optimizer",
                                   "--bf16"}));
  for (const auto& [k, v] : f) EXPECT_TRUE(kMegatronDocumented.count(k)) << k;
  EXPECT_EQ(f["--num-layers"], "24");
  EXPECT_EQ(f["--hidden-size"], "1024");
  EXPECT_EQ(f["--ffn-hidden-size"], "4096");
  EXPECT_EQ(f["--num-attention-heads"], "16");
  EXPECT_EQ(f["--seq-length"], "2048");
  EXPECT_EQ(f["--tensor-model-parallel-size"], "4");
  EXPECT_EQ(f["--pipeline-model-parallel-size"], "2");
  EXPECT_EQ(f["--micro-batch-size"], "2");
  EXPECT_EQ(f["--global-batch-size"], "64");
  EXPECT_EQ(f["--recompute-granularity"], "full");
  EXPECT_EQ(f["--recompute-method"], "uniform");
  EXPECT_EQ(f["--recompute-num-layers"], "1");
}

TEST(ExportMegatron, InterleavedLlamaPlanAddsModelAndVirtualStageFlags) {
  Plan p = make_plan(llama(32), 1, 2, 4, 2, 1, 16);
  p.strategy.recompute = Recompute::Selective;
  auto f = megatron_flags(export_megatron(p));
  EXPECT_EQ(keys_of(f),
            (std::set<std::string>{"--num-layers", "--hidden-size", "--ffn-hidden-size",
                                   "--num-attention-heads", "--group-query-attention",
                                   "--num-query-groups", "--seq-length",
                                   "--max-position-embeddings", "--position-embedding-type",
                                   "--swiglu", "--normalization",
                                   "--untie-embeddings-and-output-weights",
                                   "--tensor-model-parallel-size",
                                   "--pipeline-model-parallel-size",
                                   "--num-layers-per-virtual-pipeline-stage", "--micro-batch-size",
                                   "--global-batch-size", "--recompute-granularity", "--bf16"}));
  for (const auto& [k, v] : f) EXPECT_TRUE(kMegatronDocumented.count(k)) << k;
  EXPECT_EQ(f["--num-query-groups"], "4");
  EXPECT_EQ(f["--position-embedding-type"], "rope");
  EXPECT_EQ(f["--normalization"], "RMSNorm");
  EXPECT_EQ(f["--num-layers-per-virtual-pipeline-stage"], "4");  // 32 / (4 x 2)
  EXPECT_EQ(f["--recompute-granularity"], "selective");
  EXPECT_EQ(f["--max-position-embeddings"], "4096");
}

TEST(ExportMegatron, UnevenFirstAndLastStagesUseTheDecoderFlags) {
  Plan p = make_plan(gpt(10), 1, 1, 4, 1, 1, 8);
  p.stage_layers = stage_map({1, 4, 4, 1});
  strata::planner::check_stage_layers(p.stage_layers, p.model, 4, 1);
  auto f = megatron_flags(export_megatron(p));
  EXPECT_EQ(f["--decoder-first-pipeline-num-layers"], "1");
  EXPECT_EQ(f["--decoder-last-pipeline-num-layers"], "1");
  EXPECT_EQ(f.count("--pipeline-model-parallel-layout"), 0u);
  EXPECT_EQ(f.count("--num-layers-per-virtual-pipeline-stage"), 0u);
  // Even map: no stage flags at all.
  auto even = megatron_flags(export_megatron(make_plan(gpt(8), 1, 1, 4, 1, 1, 8)));
  EXPECT_EQ(even.count("--decoder-first-pipeline-num-layers"), 0u);
  EXPECT_EQ(even.count("--pipeline-model-parallel-layout"), 0u);
}

TEST(ExportMegatron, ArbitraryStageMapsUseTheLayoutString) {
  Plan p = make_plan(gpt(10), 1, 1, 4, 1, 1, 8);
  p.stage_layers = stage_map({3, 2, 4, 1});  // middle stages differ
  auto f = megatron_flags(export_megatron(p));
  EXPECT_EQ(f["--pipeline-model-parallel-layout"], "\"E,t*3|t*2|t*4|t,L\"");
  EXPECT_EQ(f.count("--decoder-first-pipeline-num-layers"), 0u);
  // Interleaved with an uneven map: the layout lists virtual stages in Megatron order.
  Plan q = make_plan(gpt(10), 1, 1, 2, 2, 1, 8);
  q.stage_layers = stage_map({2, 3, 3, 2});
  strata::planner::check_stage_layers(q.stage_layers, q.model, 2, 2);
  auto g = megatron_flags(export_megatron(q));
  EXPECT_EQ(g["--pipeline-model-parallel-layout"], "\"E,t*2|t*3|t*3|t*2,L\"");
  EXPECT_EQ(g.count("--num-layers-per-virtual-pipeline-stage"), 0u);
  EXPECT_EQ(megatron_layout(make_plan(gpt(8), 1, 1, 2, 1, 1, 8)), "E,t*4|t*4,L");
}

TEST(ExportDeepSpeed, ConfigKeysAreDocumentedAndBatchArithmeticHolds) {
  for (auto [dp, tp, pp, mb, gb] : {std::tuple{2, 4, 2, 2, 64}, std::tuple{8, 1, 1, 4, 256},
                                    std::tuple{4, 2, 4, 1, 512}}) {
    Plan p = make_plan(gpt(24), dp, tp, pp, 1, mb, gb);
    p.strategy.zero = dp > 4 ? 1 : 0;
    p.strategy.recompute = pp > 2 ? Recompute::Full : Recompute::None;
    auto j = strata::parse_json(export_deepspeed(p));
    for (auto it = j.begin(); it != j.end(); ++it)
      EXPECT_TRUE(kDeepSpeedDocumented.count(it.key())) << it.key();
    const std::int64_t gas = j["gradient_accumulation_steps"];
    EXPECT_EQ(j["train_batch_size"].get<std::int64_t>(),
              j["train_micro_batch_size_per_gpu"].get<std::int64_t>() * gas * dp);
    EXPECT_EQ(j["train_batch_size"], gb);
    EXPECT_EQ(j["train_micro_batch_size_per_gpu"], mb);
    EXPECT_EQ(gas, gb / (mb * dp));
    EXPECT_EQ(j["bf16"]["enabled"], true);
    EXPECT_EQ(j["zero_optimization"]["stage"], p.strategy.zero);
    EXPECT_EQ(j.contains("pipeline"), pp > 1);
    if (pp > 1) {
      EXPECT_EQ(j["pipeline"]["stages"], pp);
      EXPECT_EQ(j["pipeline"]["activation_checkpoint_interval"], pp > 2 ? 1 : 0);
    }
    EXPECT_EQ(j.contains("tensor_parallel"), tp > 1);
    if (tp > 1) EXPECT_EQ(j["tensor_parallel"]["autotp_size"], tp);
    EXPECT_EQ(j.contains("activation_checkpointing"), p.strategy.recompute != Recompute::None);
    EXPECT_EQ(j["strata_plan"]["pipeline_module"]["num_stages"], pp);
    EXPECT_EQ(j["strata_plan"]["dp"], dp);
  }
}

TEST(ExportDeepSpeed, PipelineModulePartitionFollowsTheStageMap) {
  Plan even = make_plan(gpt(8), 1, 1, 4, 1, 1, 8);
  auto j = strata::parse_json(export_deepspeed(even));
  EXPECT_EQ(j["strata_plan"]["pipeline_module"]["partition_method"], "uniform");
  EXPECT_EQ(j["strata_plan"]["pipeline_module"]["transformer_blocks_per_stage"],
            nlohmann::json::array({2, 2, 2, 2}));
  Plan uneven = make_plan(gpt(10), 1, 1, 4, 1, 1, 8);
  uneven.stage_layers = stage_map({3, 2, 4, 1});
  j = strata::parse_json(export_deepspeed(uneven));
  EXPECT_EQ(j["strata_plan"]["pipeline_module"]["partition_method"], "parameters");
  EXPECT_EQ(j["strata_plan"]["pipeline_module"]["transformer_blocks_per_stage"],
            nlohmann::json::array({3, 2, 4, 1}));
}

TEST(ExportTorchTitan, TomlKeysAreDocumentedAndValuesFollowThePlan) {
  Plan p = make_plan(llama(32), 4, 2, 4, 2, 1, 64);  // interleaved, 16 micro-batches
  p.strategy.zero = 1;
  p.strategy.recompute = Recompute::Full;
  p.strategy.sequence_parallel = true;
  auto t = toml_sections(export_torchtitan(p));
  std::set<std::string> sections;
  for (const auto& [s, kv] : t) {
    sections.insert(s);
    ASSERT_TRUE(kTorchTitanDocumented.count(s)) << s;
    for (const auto& [k, v] : kv) EXPECT_TRUE(kTorchTitanDocumented.at(s).count(k)) << s << "." << k;
  }
  EXPECT_EQ(sections, (std::set<std::string>{"training", "parallelism", "activation_checkpoint"}));
  EXPECT_EQ(t["training"]["local_batch_size"], "16");  // 64 / dp 4: one step's 16 micro-batches
  EXPECT_EQ(t["training"]["global_batch_size"], "64");
  EXPECT_EQ(t["training"]["seq_len"], "4096");
  EXPECT_EQ(t["parallelism"]["data_parallel_shard_degree"], "4");
  EXPECT_EQ(t["parallelism"]["data_parallel_replicate_degree"], "1");
  EXPECT_EQ(t["parallelism"]["tensor_parallel_degree"], "2");
  EXPECT_EQ(t["parallelism"]["pipeline_parallel_degree"], "4");
  EXPECT_EQ(t["parallelism"]["pipeline_parallel_schedule"], "\"Interleaved1F1B\"");
  EXPECT_EQ(t["parallelism"]["pipeline_parallel_microbatch_size"], "1");
  // 8 virtual stages of 4 layers: split before layers 4, 8, ..., 28.
  EXPECT_EQ(t["parallelism"]["pipeline_parallel_split_points"],
            "[\"layers.4\", \"layers.8\", \"layers.12\", \"layers.16\", \"layers.20\", "
            "\"layers.24\", \"layers.28\"]");
  EXPECT_EQ(t["activation_checkpoint"]["mode"], "\"full\"");
}

TEST(ExportTorchTitan, SchedulesDataParallelModeAndNoPipeline) {
  Plan gp = make_plan(gpt(8), 1, 1, 2, 1, 2, 8);
  gp.strategy.schedule = ScheduleKind::GPipe;
  EXPECT_EQ(toml_sections(export_torchtitan(gp))["parallelism"]["pipeline_parallel_schedule"],
            "\"GPipe\"");
  Plan ofob = make_plan(gpt(8), 1, 1, 2, 1, 2, 8);
  EXPECT_EQ(toml_sections(export_torchtitan(ofob))["parallelism"]["pipeline_parallel_schedule"],
            "\"1F1B\"");
  // Pure data parallel, no ZeRO: DDP (replicate), local batch = one micro-batch, the rest is
  // gradient accumulation (global / (local x dp)).
  Plan ddp = make_plan(gpt(8), 8, 1, 1, 1, 2, 64);
  auto t = toml_sections(export_torchtitan(ddp));
  EXPECT_EQ(t["parallelism"]["data_parallel_replicate_degree"], "8");
  EXPECT_EQ(t["parallelism"]["data_parallel_shard_degree"], "1");
  EXPECT_EQ(t["parallelism"].count("pipeline_parallel_schedule"), 0u);
  EXPECT_EQ(t["training"]["local_batch_size"], "2");
  EXPECT_EQ(t["training"]["global_batch_size"], "64");
  EXPECT_EQ(t["activation_checkpoint"]["mode"], "\"none\"");
  Plan sel = make_plan(gpt(8), 8, 1, 1, 1, 2, 64);
  sel.strategy.recompute = Recompute::Selective;
  EXPECT_EQ(toml_sections(export_torchtitan(sel))["activation_checkpoint"]["mode"], "\"selective\"");
}

TEST(ExportTorchTitan, UnevenStagesSplitWhereThePlanSplits) {
  Plan p = make_plan(gpt(10), 1, 1, 4, 1, 1, 8);
  p.stage_layers = stage_map({3, 2, 4, 1});
  EXPECT_EQ(toml_sections(export_torchtitan(p))["parallelism"]["pipeline_parallel_split_points"],
            "[\"layers.3\", \"layers.5\", \"layers.9\"]");
  // A last stage holding only the head starts at the final norm.
  p.stage_layers = stage_map({3, 3, 4, 0});
  EXPECT_EQ(toml_sections(export_torchtitan(p))["parallelism"]["pipeline_parallel_split_points"],
            "[\"layers.3\", \"layers.6\", \"norm\"]");
}

TEST(ExportTarget, NamesRoundTripAndUnknownIsAnInputError) {
  for (const auto& n : export_target_names()) EXPECT_EQ(to_string(export_target_from_string(n)), n);
  EXPECT_THROW(export_target_from_string("jax"), strata::InputError);
}

TEST(ExportCommand, BadTargetIsAParseErrorNamingTheFlag) {
  CLI::App app;
  add_export_command(app);
  try {
    app.parse(std::vector<std::string>{"bogus", "--to", "plan.yaml", "--plan", "export"});
    FAIL() << "expected a CLI11 parse error";
  } catch (const CLI::ParseError& e) {  // main.cpp maps ParseError to `error:` and exit 2
    EXPECT_NE(std::string(e.what()).find("--to"), std::string::npos) << e.what();
  }
}

#ifdef STRATA_EXE
namespace {
struct CmdResult {
  int code;
  std::string out, err;
};
CmdResult run_strata(const std::string& args, const std::filesystem::path& dir) {
  const auto out = dir / "stdout.txt", err = dir / "stderr.txt";
  const std::string cmd = std::string("'") + STRATA_EXE + "' " + args + " >'" + out.string() +
                          "' 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  CmdResult r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, "", ""};
  r.out = strata::read_file(out.string());
  r.err = strata::read_file(err.string());
  return r;
}
}  // namespace

TEST(ExportCommand, ExecutableWritesFilesAndRejectsBadInputWithExit2) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("strata_export_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Plan p = make_plan(llama(32), 1, 2, 4, 2, 1, 16);
  const std::string plan = (dir / "plan.yaml").string();
  strata::write_file_atomic(plan, strata::planner::plan_to_yaml(p));

  CmdResult bad = run_strata("export --plan '" + plan + "' --to jax", dir);
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err.rfind("error: ", 0), 0u) << bad.err;
  EXPECT_NE(bad.err.find("--to"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;

  CmdResult missing = run_strata("export --plan '" + (dir / "nope.yaml").string() + "' --to megatron", dir);
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("--plan"), std::string::npos) << missing.err;

  strata::write_file_atomic(plan, "schema_version: 1\nmodel: {name: x}\n");
  CmdResult broken = run_strata("export --plan '" + plan + "' --to deepspeed", dir);
  EXPECT_EQ(broken.code, 2);
  EXPECT_EQ(broken.err.rfind("error: ", 0), 0u) << broken.err;

  strata::write_file_atomic(plan, strata::planner::plan_to_yaml(p));
  const std::string out = (dir / "args.txt").string();
  CmdResult ok = run_strata("export --plan '" + plan + "' --to megatron --out '" + out + "'", dir);
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(strata::read_file(out), export_megatron(strata::planner::load_plan(plan)));
  CmdResult stdout_run = run_strata("export --plan '" + plan + "' --to torchtitan", dir);
  EXPECT_EQ(stdout_run.code, 0) << stdout_run.err;
  EXPECT_EQ(stdout_run.out, export_torchtitan(strata::planner::load_plan(plan)));
  fs::remove_all(dir);
}
#endif
