// Issue 28's export items: --train-tokens as iterations, Slurm scripts (checked with
// `bash -n` and against sbatch's documented options), and the user's own Megatron-LM script
// patched with only the plan's parallel flags. Expected values are worked out by hand.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/atomic_file.h"
#include "export/export_formats.h"
#include "export/import_megatron.h"
#include "export/megatron_script_patch.h"
#include "tests/export/export_checks.h"
#include "tests/export/test_plans.h"
#include "tests/text_lines.h"

using namespace strata::exports;
using namespace strata::exports::testing;
using strata::planner::Plan;

namespace {

ExportOptions slurm(int gpus_per_node) {
  ExportOptions o;
  o.launcher = Launcher::Slurm;
  o.gpus_per_node = gpus_per_node;
  return o;
}

// `bash -n` on the text: 0 when it parses.
int bash_syntax_check(const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("strata_launch_test_" + std::to_string(::getpid()) + ".sh");
  strata::write_file_atomic(path.string(), text);
  const int rc = std::system(("bash -n '" + path.string() + "'").c_str());
  std::filesystem::remove(path);
  return rc;
}

using strata::testing::lines_of;

// The plan's Megatron flags for a small Llama: dp 2 x tp 2 x pp 2, SP, micro-batch 1 of 16.
Plan llama_plan() {
  Plan p = make_plan(llama(8), 2, 2, 2, 1, 1, 16);
  p.strategy.sequence_parallel = true;
  return p;
}

// A launch script for 8 GPUs at tp 2, pp 2 read back by the Megatron import as that job.
void expect_reads_back_as_tp2_pp2_dp2(const std::string& script, const std::string& source) {
  ImportedJob job = import_megatron_args(script, source);
  resolve_world_size(job, 0, source);
  EXPECT_EQ(job.world_size, 8);
  EXPECT_EQ(job.strategy.dp, 2);
  EXPECT_EQ(job.strategy.tp, 2);
  EXPECT_EQ(job.strategy.pp, 2);
}

}  // namespace

TEST(TrainTokens, IterationsCoverTheTokensInEveryFramework) {
  const Plan p = make_plan(llama(8), 2, 2, 2, 1, 1, 64);  // 64 x 4096 = 262144 tokens a step
  EXPECT_EQ(train_iterations(p, 262144 * 10), 10);
  EXPECT_EQ(train_iterations(p, 1'000'000'000), 3815);  // 3814 steps hold 999,817,216
  EXPECT_EQ(train_iterations(p, 1), 1);
  ExportOptions o;
  o.train_tokens = 1'000'000'000;
  EXPECT_EQ(arg_map(megatron_args(p, overlap_stack(), o)).at("--train-iters"), "3815");
  EXPECT_EQ(arg_map(megatron_args(p, overlap_stack())).count("--train-iters"), 0u);
  EXPECT_EQ(toml_sections(export_torchtitan(p, overlap_stack(), o))["training"]["steps"], "3815");
  const Plan ds = make_plan(llama(8), 8, 1, 1, 1, 1, 64);
  EXPECT_EQ(arg_map(megatron_deepspeed_args(ds, overlap_stack(), o)).at("--train-iters"), "3815");
  // The names and types at the pinned commits.
  expect_arg_type(table("megatron_args.yaml")["args"], "--train-iters", "3815");
  expect_arg_type(table("megatron_deepspeed_args.yaml")["args"], "--train-iters", "3815");
  EXPECT_EQ(table("torchtitan_config.yaml")["sections"]["training"]["steps"].as<std::string>(), "int");
}

TEST(SlurmScript, MegatronOnTwoNodesParsesAndUsesOnlyDocumentedOptions) {
  const Plan p = llama_plan();  // 8 GPUs
  const std::string script = export_megatron(p, overlap_stack(), slurm(4));
  EXPECT_EQ(bash_syntax_check(script), 0) << script;
  const auto lines = lines_of(script);
  ASSERT_GT(lines.size(), 8u);
  EXPECT_EQ(lines[0], "#!/bin/bash");
  // sbatch reads #SBATCH lines only before the first command: all of them come first.
  const std::set<std::string> documented = {"--job-name", "--nodes", "--ntasks-per-node",
                                            "--gpus-per-node", "--exclusive"};
  std::map<std::string, std::string> sbatch;
  bool command_seen = false;
  for (const auto& l : lines) {
    if (l.rfind("#SBATCH ", 0) == 0) {
      EXPECT_FALSE(command_seen) << l;
      const std::string opt = l.substr(8);
      const auto eq = opt.find('=');
      EXPECT_EQ(documented.count(opt.substr(0, eq)), 1u) << l;
      sbatch[opt.substr(0, eq)] = eq == std::string::npos ? "" : opt.substr(eq + 1);
    } else if (!l.empty() && l[0] != '#') {
      command_seen = true;
    }
  }
  EXPECT_EQ(sbatch.at("--nodes"), "2");  // 8 GPUs / 4 per node
  EXPECT_EQ(sbatch.at("--gpus-per-node"), "4");
  EXPECT_EQ(sbatch.at("--ntasks-per-node"), "1");
  EXPECT_EQ(sbatch.at("--job-name"), "strata-llama-test");
  EXPECT_NE(script.find("\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"), std::string::npos);  // tp 2
  EXPECT_NE(script.find("MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"),
            std::string::npos);
  EXPECT_NE(script.find("srun --nodes=2 --ntasks-per-node=1 --kill-on-bad-exit=1 \\\n"
                        "  torchrun --nnodes 2 --nproc_per_node 4 --rdzv_id \"$SLURM_JOB_ID\" "
                        "--rdzv_backend c10d --rdzv_endpoint \"$MASTER_ADDR:$MASTER_PORT\" "
                        "pretrain_gpt.py \\\n  --num-layers 8 \\\n"),
            std::string::npos)
      << script;
  // `simulate --from megatron` reads the script back as the plan's job.
  expect_reads_back_as_tp2_pp2_dp2(script, "job.sbatch");
  // The arguments are the torchrun export's, line for line.
  const std::string plain = export_megatron(p, overlap_stack());
  const std::string args_part = plain.substr(plain.find("pretrain_gpt.py"));
  EXPECT_EQ(script.substr(script.size() - args_part.size()), args_part);
}

TEST(SlurmScript, EnvironmentFilesAndRefusals) {
  // Megatron-FSDP (ZeRO-3) asserts CUDA_DEVICE_MAX_CONNECTIONS is not 1.
  const Plan z3 = with_cp_zero(make_plan(gpt(8), 4, 1, 1, 1, 2, 64), 1, 3);
  const std::string fsdp = export_megatron(z3, overlap_stack(), slurm(4));
  EXPECT_NE(fsdp.find("\nunset CUDA_DEVICE_MAX_CONNECTIONS\n"), std::string::npos);
  EXPECT_EQ(bash_syntax_check(fsdp), 0);
  // TorchTitan: the script writes the TOML the plain export prints and runs the trainer on it.
  const Plan p = llama_plan();
  const std::string tt = export_torchtitan(p, overlap_stack(), slurm(8));
  EXPECT_EQ(bash_syntax_check(tt), 0) << tt;
  const std::string toml = export_torchtitan(p, overlap_stack());
  EXPECT_NE(tt.find("cat > strata_torchtitan.toml <<'STRATA_EOF'\n" + toml + "STRATA_EOF\n"),
            std::string::npos)
      << tt;
  EXPECT_NE(tt.find("-m torchtitan.train \\\n  --job.config_file strata_torchtitan.toml\n"),
            std::string::npos);
  EXPECT_NE(tt.find("#SBATCH --nodes=1\n"), std::string::npos);
  // Megatron-DeepSpeed: the script writes ds_config.json (the --to deepspeed output).
  const Plan ds = make_plan(llama(8), 8, 1, 1, 1, 1, 64);
  const std::string mds = export_megatron_deepspeed(ds, overlap_stack(), slurm(8));
  EXPECT_NE(mds.find("cat > ds_config.json <<'STRATA_EOF'\n" + export_deepspeed(ds, overlap_stack())),
            std::string::npos);
  EXPECT_EQ(bash_syntax_check(mds), 0);
  // Refused by name: a config has no command; GPUs that do not fill whole nodes.
  EXPECT_NE(export_error(ds, ExportTarget::DeepSpeed).find("no error"), std::string::npos);
  try {
    export_plan(ds, overlap_stack(), ExportTarget::DeepSpeed, slurm(8));
    ADD_FAILURE() << "expected an InputError";
  } catch (const strata::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--launcher slurm: --to deepspeed writes a DeepSpeed config"),
              std::string::npos);
  }
  try {
    export_megatron(p, overlap_stack(), slurm(3));
    ADD_FAILURE() << "expected an InputError";
  } catch (const strata::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("8 GPUs do not fill whole nodes of 3 GPUs"), std::string::npos);
  }
  EXPECT_THROW(launcher_from_string("mpirun"), strata::InputError);
}

namespace {

// Runs `script` with bash in a scratch folder whose `torchrun` is a stand-in that writes the
// arguments it was given, one a line, and the CUDA_DEVICE_MAX_CONNECTIONS it sees.
std::string read_or_empty(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct StandInRun {
  int rc = -1;
  std::vector<std::string> args;
  std::string env, err;
};
StandInRun run_with_stand_in_torchrun(const std::string& script, const std::string& vars) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("strata_torchrun_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  strata::write_file_atomic((dir / "torchrun").string(),
                            "#!/bin/bash\nprintf '%s\\n' \"$@\" > args.txt\n"
                            "printf '%s\\n' \"${CUDA_DEVICE_MAX_CONNECTIONS-unset}\" > env.txt\n");
  fs::permissions(dir / "torchrun", fs::perms::owner_all);
  strata::write_file_atomic((dir / "job.sh").string(), script);
  StandInRun r;
  r.rc = std::system(("cd '" + dir.string() + "' && env -u MASTER_ADDR -u MASTER_PORT -u RDZV_ID PATH=\"" + dir.string() +
                      ":$PATH\" " + vars + " bash job.sh 2> err.txt")
                         .c_str());
  r.args = lines_of(read_or_empty((dir / "args.txt").string()));
  r.env = read_or_empty((dir / "env.txt").string());
  r.err = read_or_empty((dir / "err.txt").string());
  fs::remove_all(dir);
  return r;
}

}  // namespace

// torchrun on two nodes: a script each node runs, with the rendezvous torchrun's docs give
// for a fault-tolerant multi-node job (c10d at a host:port, one id for all nodes) and the
// framework's environment exported; run for real against a stand-in torchrun.
TEST(TorchrunScript, TwoNodesGetTheC10dRendezvousAndTheEnvironment) {
  const Plan p = llama_plan();  // 8 GPUs
  ExportOptions o;
  o.gpus_per_node = 4;
  const std::string script = export_megatron(p, overlap_stack(), o);
  EXPECT_EQ(bash_syntax_check(script), 0) << script;
  const auto lines = lines_of(script);
  ASSERT_GT(lines.size(), 4u);
  EXPECT_EQ(lines[0], "#!/bin/bash");
  EXPECT_NE(script.find("\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"), std::string::npos) << script;  // tp 2

  // torchrun's flags, as torch/distributed/run.py defines them (underscore spellings).
  const std::set<std::string> documented = {"--nnodes",        "--nproc_per_node", "--rdzv_backend",
                                            "--rdzv_endpoint", "--rdzv_id",        "--rdzv_conf",
                                            "--standalone",    "--max_restarts",   "--node_rank",
                                            "--master_addr",   "--master_port"};
  const auto command = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("torchrun ", 0) == 0; });
  ASSERT_NE(command, lines.end()) << script;
  std::set<std::string> written;
  std::istringstream words(command->substr(0, command->find(" pretrain_gpt.py")));
  for (std::string w; words >> w;)
    if (w.rfind("--", 0) == 0) {
      EXPECT_EQ(documented.count(w), 1u) << w;
      written.insert(w);
    }
  for (const char* f : {"--nnodes", "--nproc_per_node", "--rdzv_id", "--rdzv_backend", "--rdzv_endpoint"})
    EXPECT_EQ(written.count(f), 1u) << f;
  // run.py gives --node_rank to the static rendezvous only; c10d numbers the nodes itself.
  EXPECT_EQ(written.count("--node_rank"), 0u);

  const StandInRun run = run_with_stand_in_torchrun(script, "MASTER_ADDR=node0");
  ASSERT_EQ(run.rc, 0) << run.err;
  const std::vector<std::string> head = {"--nnodes", "2", "--nproc_per_node", "4", "--rdzv_id", "strata-llama-test",
                                         "--rdzv_backend", "c10d", "--rdzv_endpoint", "node0:29500",
                                         "pretrain_gpt.py", "--num-layers", "8"};
  ASSERT_GE(run.args.size(), head.size());
  EXPECT_EQ(std::vector<std::string>(run.args.begin(), run.args.begin() + static_cast<long>(head.size())), head);
  EXPECT_EQ(run.env, "1\n");
  // Another port and rendezvous id from the environment.
  const StandInRun other = run_with_stand_in_torchrun(script, "MASTER_ADDR=10.0.0.7 MASTER_PORT=6000 RDZV_ID=job42");
  ASSERT_EQ(other.rc, 0) << other.err;
  EXPECT_EQ(other.args[5], "job42");
  EXPECT_EQ(other.args[9], "10.0.0.7:6000");
  // Without MASTER_ADDR the script stops before torchrun, saying what to set.
  const StandInRun none = run_with_stand_in_torchrun(script, "");
  EXPECT_NE(none.rc, 0);
  EXPECT_TRUE(none.args.empty());
  EXPECT_NE(none.err.find("set MASTER_ADDR"), std::string::npos) << none.err;

  // `--from megatron` reads the script back as the plan's job.
  expect_reads_back_as_tp2_pp2_dp2(script, "job.sh");
  // Megatron-DeepSpeed takes the same path.
  const Plan ds = make_plan(llama(8), 16, 1, 1, 1, 1, 64);
  const std::string mds = export_megatron_deepspeed(ds, overlap_stack(), o);
  EXPECT_EQ(bash_syntax_check(mds), 0) << mds;
  EXPECT_NE(mds.find("torchrun --nnodes 4 --nproc_per_node 4 --rdzv_id"), std::string::npos) << mds;
}

// One node keeps the one line (no rendezvous to set up), its environment in a comment.
TEST(TorchrunScript, OneNodeStaysOneLine) {
  ExportOptions o;
  o.gpus_per_node = 8;
  const std::string line = export_megatron(llama_plan(), overlap_stack(), o);
  EXPECT_EQ(line.find("#!/bin/bash"), std::string::npos);
  EXPECT_EQ(line.find("--rdzv"), std::string::npos);
  EXPECT_NE(line.find("\ntorchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py \\\n"), std::string::npos) << line;
  EXPECT_NE(line.find("# launch environment: CUDA_DEVICE_MAX_CONNECTIONS=1\n"), std::string::npos) << line;
  EXPECT_EQ(bash_syntax_check(line), 0);
}

TEST(ScriptPatch, ArraysKeepEveryOtherLineAndGetThePlansFlagsInPlace) {
  // A GPT-3 175B job written with bash arrays, in the style of Megatron-LM's examples.
  const std::string script =
      "#!/bin/bash\n"
      "# GPT-3 175B on 512 A100s\n"
      "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
      "GPUS_PER_NODE=8\n"
      "NUM_NODES=64\n"
      "DISTRIBUTED_ARGS=(\n"
      "    --nproc_per_node $GPUS_PER_NODE\n"
      "    --nnodes $NUM_NODES\n"
      ")\n"
      "GPT_MODEL_ARGS=(\n"
      "    --num-layers 96\n"
      "    --hidden-size 12288\n"
      "    --num-attention-heads 96\n"
      "    --seq-length 2048\n"
      ")\n"
      "TRAINING_ARGS=(\n"
      "    --micro-batch-size 1\n"
      "    --global-batch-size 1536\n"
      "    --rampup-batch-size 16 16 5859375\n"
      "    --train-iters 500000\n"
      "    --lr 6.0e-5\n"
      "    --bf16\n"
      "    --use-distributed-optimizer\n"
      ")\n"
      "MODEL_PARALLEL_ARGS=(\n"
      "    --tensor-model-parallel-size 8\n"
      "    --pipeline-model-parallel-size 16  # one stage per 6 layers\n"
      ")\n"
      "DATA_ARGS=(\n"
      "    --data-path $DATA_PATH\n"
      "    --vocab-file $VOCAB_FILE --merge-file $MERGE_FILE\n"
      "    --split 949,50,1\n"
      ")\n"
      "torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \\\n"
      "    ${GPT_MODEL_ARGS[@]} \\\n"
      "    ${TRAINING_ARGS[@]} \\\n"
      "    ${MODEL_PARALLEL_ARGS[@]} \\\n"
      "    ${DATA_ARGS[@]}\n";
  // The plan: tp 4 x pp 8 x vpp 3 (4 layers a virtual stage) x dp 16, SP, selective
  // recompute, ZeRO-1, micro-batch 1 of 1536; fp16 stack without overlaps.
  Plan p = make_plan(strata::testing::test_model("gpt3", 96, 12288, 96, 96, 49152, 50257, 2048),
                     16, 4, 8, 3, 1, 1536);
  p.strategy.sequence_parallel = true;
  p.strategy.recompute = strata::planner::Recompute::Selective;
  p.strategy.zero = 1;
  const ScriptPatch patch = patch_megatron_script(script, "job.sh", megatron_args(p, plain_stack()));
  std::string expected = script;
  const auto replace = [&](const std::string& from, const std::string& to) {
    const auto at = expected.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    expected.replace(at, from.size(), to);
  };
  replace("--tensor-model-parallel-size 8\n", "--tensor-model-parallel-size 4\n");
  replace("    --pipeline-model-parallel-size 16  # one stage per 6 layers\n",
          "    --pipeline-model-parallel-size 8  # one stage per 6 layers\n"
          "    --sequence-parallel\n"
          "    --num-layers-per-virtual-pipeline-stage 4\n"
          "    --recompute-granularity selective\n");
  EXPECT_EQ(patch.text, expected);
  const std::vector<std::string> changes = {
      "job.sh:26: --tensor-model-parallel-size 8 -> 4",
      "job.sh:27: --pipeline-model-parallel-size 16 -> 8",
      "job.sh:27: added --sequence-parallel",
      "job.sh:27: added --num-layers-per-virtual-pipeline-stage 4",
      "job.sh:27: added --recompute-granularity selective"};
  EXPECT_EQ(patch.changes, changes);
  EXPECT_EQ(bash_syntax_check(patch.text), 0);
}

TEST(ScriptPatch, ContinuedCommandRemovesFlagsTheLayoutDropsAndImportsAsThePlan) {
  const std::string script =
      "#!/bin/bash\n"
      "set -e\n"
      "torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py \\\n"
      "    --num-layers 8 --hidden-size 1024 \\\n"
      "    --num-attention-heads 16 --group-query-attention --num-query-groups 4 \\\n"
      "    --ffn-hidden-size 2816 --seq-length 4096 --max-position-embeddings 4096 \\\n"
      "    --tokenizer-type NullTokenizer --vocab-size 32000 \\\n"
      "    --swiglu --normalization RMSNorm --position-embedding-type rope \\\n"
      "    --untie-embeddings-and-output-weights --disable-bias-linear \\\n"
      "    --attention-dropout 0.0 --hidden-dropout 0.0 --bf16 \\\n"
      "    --tensor-model-parallel-size 1 --micro-batch-size 4 --global-batch-size 16 \\\n"
      "    --recompute-activations \\\n"
      "    --lr 3e-4 --train-iters 100\n";
  const Plan p = llama_plan();
  const ScriptPatch patch = patch_megatron_script(script, "job.sh", megatron_args(p, overlap_stack()));
  std::string expected = script;
  expected.replace(expected.find("    --tensor-model-parallel-size 1"),
                   std::string("    --tensor-model-parallel-size 1 --micro-batch-size 4 "
                               "--global-batch-size 16 \\\n    --recompute-activations \\\n").size(),
                   "    --tensor-model-parallel-size 2 --micro-batch-size 1 --global-batch-size 16 "
                   "--pipeline-model-parallel-size 2 --sequence-parallel --overlap-grad-reduce "
                   "--tp-comm-overlap \\\n");
  EXPECT_EQ(patch.text, expected);
  ASSERT_EQ(patch.changes.size(), 7u);
  EXPECT_EQ(patch.changes[0], "job.sh:11: --tensor-model-parallel-size 1 -> 2");
  EXPECT_EQ(patch.changes[1], "job.sh:11: --micro-batch-size 4 -> 1");
  EXPECT_EQ(patch.changes[2], "job.sh:12: removed --recompute-activations");
  EXPECT_EQ(patch.changes[3], "job.sh:11: added --pipeline-model-parallel-size 2");
  EXPECT_EQ(bash_syntax_check(patch.text), 0);
  // Read back, the patched job is the plan's layout.
  ImportedJob job = import_megatron_args(patch.text, "job.sh");
  resolve_world_size(job, 0, "job.sh");
  EXPECT_EQ(job.strategy.tp, 2);
  EXPECT_EQ(job.strategy.pp, 2);
  EXPECT_EQ(job.strategy.dp, 2);
  EXPECT_TRUE(job.strategy.sequence_parallel);
  EXPECT_EQ(job.strategy.micro_batch, 1);
  EXPECT_EQ(job.strategy.recompute, strata::planner::Recompute::None);
}

TEST(ScriptPatch, LastLineOfACommandKeepsTheContinuationsRight) {
  const std::string script =
      "python pretrain_gpt.py \\\n"
      "  --num-layers 8 \\\n"
      "  --tensor-model-parallel-size 1\n"
      "echo done\n";
  const ScriptPatch patch =
      patch_megatron_script(script, "job.sh", megatron_args(llama_plan(), plain_stack()));
  EXPECT_EQ(patch.text,
            "python pretrain_gpt.py \\\n"
            "  --num-layers 8 \\\n"
            "  --tensor-model-parallel-size 2 \\\n"
            "  --pipeline-model-parallel-size 2 \\\n"
            "  --sequence-parallel \\\n"
            "  --micro-batch-size 1 \\\n"
            "  --global-batch-size 16\n"
            "echo done\n");
  EXPECT_EQ(bash_syntax_check(patch.text), 0);
  // The removed flag was the command's last line: the line before it (here the last one
  // added) ends the command.
  const Plan plain = make_plan(llama(8), 8, 1, 1, 1, 1, 16);  // dp only: no SP
  const ScriptPatch dp_only = patch_megatron_script(
      "python pretrain_gpt.py \\\n  --micro-batch-size 1 \\\n  --global-batch-size 16 \\\n"
      "  --sequence-parallel\necho done\n",
      "job.sh", megatron_args(plain, plain_stack()));
  EXPECT_EQ(dp_only.text,
            "python pretrain_gpt.py \\\n  --micro-batch-size 1 \\\n  --global-batch-size 16 \\\n"
            "  --tensor-model-parallel-size 1 \\\n  --pipeline-model-parallel-size 1\necho done\n");
  EXPECT_EQ(bash_syntax_check(dp_only.text), 0);
}

TEST(ScriptPatch, MoeJobGetsThePlansExpertLayoutAndDispatcher) {
  // Mixtral run with Megatron's default allgather dispatcher and ep 2; the plan: tp 2 x dp 4,
  // ep 8 x etp 1 (experts over tp x dp), all-to-all dispatch.
  const std::string script =
      "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
      "  --num-layers 32 --hidden-size 4096 --num-experts 8 --moe-router-topk 2 \\\n"
      "  --moe-grouped-gemm --moe-token-dispatcher-type allgather \\\n"
      "  --tensor-model-parallel-size 2 --expert-model-parallel-size 2 \\\n"
      "  --micro-batch-size 1 --global-batch-size 64 --sequence-parallel\n";
  const Plan p = moe_plan(strata::models::load_model("mixtral-8x7b"), 4, 2, 1, 1, 64, 8, 1);
  const ScriptPatch patch = patch_megatron_script(script, "moe.sh", megatron_args(p, plain_stack()));
  EXPECT_EQ(patch.text,
            "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
            "  --num-layers 32 --hidden-size 4096 --num-experts 8 --moe-router-topk 2 \\\n"
            "  --moe-grouped-gemm --moe-token-dispatcher-type alltoall \\\n"
            "  --tensor-model-parallel-size 2 --expert-model-parallel-size 8 \\\n"
            "  --micro-batch-size 1 --global-batch-size 64 --sequence-parallel "
            "--pipeline-model-parallel-size 1 --expert-tensor-parallel-size 1\n");
  // Another expert count is another model.
  EXPECT_THROW(patch_megatron_script("pretrain_gpt.py --num-experts 16\n", "moe.sh",
                                     megatron_args(p, plain_stack())),
               strata::InputError);
}

// --recompute-modules is a list (nargs): its value is every word up to the next flag, replaced
// or removed whole.
TEST(ScriptPatch, RecomputeModulesListIsReplacedOrRemovedWhole) {
  const std::string script =
      "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
      "  --num-layers 32 --hidden-size 4096 --num-experts 8 --moe-router-topk 2 \\\n"
      "  --recompute-granularity selective --recompute-modules core_attn mlp --bf16 \\\n"
      "  --micro-batch-size 1 --global-batch-size 64\n";
  Plan p = moe_plan(strata::models::load_model("mixtral-8x7b"), 4, 2, 1, 1, 64, 8, 1);
  p.strategy.recompute = strata::planner::Recompute::Selective;
  p.strategy.recompute_modules.moe_act = true;
  p.strategy.recompute_modules.layernorm = true;
  const ScriptPatch patch = patch_megatron_script(script, "moe.sh", megatron_args(p, plain_stack()));
  EXPECT_NE(patch.text.find("--recompute-granularity selective --recompute-modules layernorm moe_act --bf16 \\\n"),
            std::string::npos) << patch.text;
  EXPECT_EQ(bash_syntax_check(patch.text), 0);
  EXPECT_NE(std::find(patch.changes.begin(), patch.changes.end(),
                      "moe.sh:3: --recompute-modules core_attn mlp -> layernorm moe_act"),
            patch.changes.end());
  // A plan without recompute drops the granularity and the whole list.
  p.strategy.recompute = strata::planner::Recompute::None;
  p.strategy.recompute_modules = {};
  const ScriptPatch none = patch_megatron_script(script, "moe.sh", megatron_args(p, plain_stack()));
  EXPECT_EQ(none.text.find("recompute"), std::string::npos) << none.text;
  EXPECT_NE(none.text.find("--moe-router-topk 2 \\\n  --bf16 \\\n"), std::string::npos) << none.text;
  EXPECT_EQ(bash_syntax_check(none.text), 0);
}

TEST(ScriptPatch, RefusesAnotherModelAValueOnTheNextLineAndAScriptWithoutACommand) {
  const auto args = megatron_args(llama_plan(), plain_stack());
  const auto error = [&](const std::string& script) {
    try {
      patch_megatron_script(script, "job.sh", args);
    } catch (const strata::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("pretrain_gpt.py --num-layers 96 --tensor-model-parallel-size 2\n"),
            "job.sh:1: --num-layers 96 but the plan's model has 8: the plan is for another model");
  EXPECT_EQ(error("pretrain_gpt.py --num-layers $LAYERS\n"), "no error");  // not a number: kept
  EXPECT_EQ(error("pretrain_gpt.py \\\n  --tensor-model-parallel-size \\\n  4\n"),
            "job.sh:2: --tensor-model-parallel-size has its value on another line; put the value "
            "on the flag's line so the plan's can replace it");
  EXPECT_NE(error("echo hello\n").find("job.sh: holds no Megatron-LM parallel flag and no *.py"),
            std::string::npos);
  EXPECT_EQ(error("pretrain_gpt.py \\\n  --num-layers \\\n  96\n"), "no error");  // nothing to compare
  // --train-tokens writes --train-iters, which Megatron refuses beside --train-samples.
  ExportOptions o;
  o.train_tokens = 1'000'000;
  try {
    patch_megatron_script("pretrain_gpt.py --train-samples 1000\n", "job.sh",
                          megatron_args(llama_plan(), plain_stack(), o));
    ADD_FAILURE() << "expected an InputError";
  } catch (const strata::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("job.sh:1: the script trains by samples"), std::string::npos);
  }
  const ScriptPatch iters = patch_megatron_script("pretrain_gpt.py --train-iters 500000\n", "job.sh",
                                                  megatron_args(llama_plan(), plain_stack(), o));
  // 16 x 4096 = 65536 tokens a step: 1M tokens = 15.26 -> 16 iterations.
  EXPECT_EQ(iters.text.rfind("pretrain_gpt.py --train-iters 16 ", 0), 0u) << iters.text;
}

// One-line arrays opened on the flag's line (`PARALLEL=(--tensor-model-parallel-size 8 ...)`)
// and quoted expansions ("${PARALLEL[@]}"): the flags are found where they are, none is
// added a second time, and the patched script imports as the plan.
TEST(ScriptPatch, OneLineArraysAndQuotedExpansionsAreFoundInPlace) {
  const std::string script =
      "#!/bin/bash\n"
      "LAUNCH=(--nnodes 64 --nproc_per_node 8)\n"
      "MODEL=(--num-layers 96 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048)\n"
      "PARALLEL=(--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16)\n"
      "TRAIN=(--micro-batch-size 1 --global-batch-size 1536 --bf16 --use-distributed-optimizer)\n"
      "torchrun \"${LAUNCH[@]}\" pretrain_gpt.py \"${MODEL[@]}\" \"${PARALLEL[@]}\" \"${TRAIN[@]}\" "
      "--vocab-file v.json --merge-file m.txt\n";
  Plan p = make_plan(strata::testing::test_model("gpt3", 96, 12288, 96, 96, 49152, 50257, 2048),
                     16, 4, 8, 1, 1, 1536);
  p.strategy.zero = 1;
  const ScriptPatch patch = patch_megatron_script(script, "job.sh", megatron_args(p, plain_stack()));
  std::string expected = script;
  expected.replace(expected.find("--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16"),
                   std::string("--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16").size(),
                   "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 8");
  EXPECT_EQ(patch.text, expected);
  const std::vector<std::string> changes = {"job.sh:4: --tensor-model-parallel-size 8 -> 4",
                                            "job.sh:4: --pipeline-model-parallel-size 16 -> 8"};
  EXPECT_EQ(patch.changes, changes);
  ImportedJob job = import_megatron_args(patch.text, "job.sh");
  resolve_world_size(job, 0, "job.sh");
  EXPECT_EQ(job.strategy.tp, 4);
  EXPECT_EQ(job.strategy.pp, 8);
  EXPECT_EQ(job.strategy.dp, 16);
  EXPECT_EQ(job.model.layers, 96);
}
