// `strata export`: target names, a bad --to is a usage error (exit 2, one `error:` line), and
// the executable writes what the library renders under the plan's (or --stack's) stack. The
// names and values of each output are checked in framework_names_test.cpp.
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
#include "costmodel/software_stack.h"
#include "tests/export/test_plans.h"
#include "common/atomic_file.h"
#include "common/errors.h"

using namespace strata::cli;
using namespace strata::exports;
using strata::planner::Plan;
using strata::planner::Recompute;
using strata::planner::ScheduleKind;

using namespace strata::exports::testing;

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

  // The plan's recorded stack decides the precision and overlap flags: megatron-2021 trains
  // in fp16 without overlapping the gradient reduction (costmodel/stacks/megatron-2021.yaml).
  p.prediction.stack = "megatron-2021";
  p.strategy.dp = 2;
  p.strategy.global_batch = 32;
  strata::write_file_atomic(plan, strata::planner::plan_to_yaml(p));
  const std::string out = (dir / "args.txt").string();
  CmdResult ok = run_strata("export --plan '" + plan + "' --to megatron --out '" + out + "'", dir);
  EXPECT_EQ(ok.code, 0) << ok.err;
  const std::string args = strata::read_file(out);
  EXPECT_NE(args.find("  --fp16 \\\n"), std::string::npos) << args;
  EXPECT_EQ(args.find("--overlap-grad-reduce"), std::string::npos) << args;
  // --stack overrides it: mcore-2024 is bf16 and overlaps the gradient reduction.
  CmdResult mcore = run_strata("export --plan '" + plan + "' --to megatron --stack mcore-2024", dir);
  EXPECT_EQ(mcore.code, 0) << mcore.err;
  EXPECT_NE(mcore.out.find("  --bf16 \\\n"), std::string::npos) << mcore.out;
  EXPECT_NE(mcore.out.find("  --overlap-grad-reduce"), std::string::npos) << mcore.out;
  const auto mcore_stack = strata::costmodel::load_software_stack("mcore-2024");
  EXPECT_EQ(mcore.out, export_megatron(strata::planner::load_plan(plan), mcore_stack));
  CmdResult stdout_run =
      run_strata("export --plan '" + plan + "' --to torchtitan --stack mcore-2024", dir);
  EXPECT_EQ(stdout_run.code, 0) << stdout_run.err;
  EXPECT_EQ(stdout_run.out, export_torchtitan(strata::planner::load_plan(plan), mcore_stack));
  CmdResult bad_stack = run_strata("export --plan '" + plan + "' --to megatron --stack nope", dir);
  EXPECT_EQ(bad_stack.code, 2);
  EXPECT_NE(bad_stack.err.find("--stack"), std::string::npos) << bad_stack.err;
  fs::remove_all(dir);
}

TEST(ExportCommand, TrainTokensSlurmAndFromWithOneErrorLineEach) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("strata_export_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Plan p = make_plan(llama(8), 2, 2, 2, 1, 1, 16);  // 8 GPUs on dgx-a100 (8 per node)
  p.strategy.sequence_parallel = true;
  const std::string plan = (dir / "plan.yaml").string();
  strata::write_file_atomic(plan, strata::planner::plan_to_yaml(p));
  const std::string base = "export --plan '" + plan + "' --stack mcore-2024 ";
  // 16 x 4096 = 65536 tokens a step: 1M tokens = 15.26 -> 16 iterations.
  CmdResult iters = run_strata(base + "--to megatron --train-tokens 1M", dir);
  EXPECT_EQ(iters.code, 0) << iters.err;
  EXPECT_NE(iters.out.find("  --train-iters 16 \\\n"), std::string::npos) << iters.out;
  CmdResult ds = run_strata(base + "--to deepspeed --train-tokens 1M", dir);
  EXPECT_EQ(ds.code, 0) << ds.err;
  EXPECT_NE(ds.err.find("run the training loop for 16 steps"), std::string::npos) << ds.err;
  // torchrun takes the plan's cluster's nodes as well: the same 8 GPUs on a cluster of 4-GPU
  // nodes are two nodes of 4.
  std::string four = strata::read_file(std::string(STRATA_SOURCE_DIR) + "/costmodel/hardware/clusters/dgx-a100.yaml");
  four.replace(four.find("gpus_per_node: 8"), 16, "gpus_per_node: 4");
  strata::write_file_atomic((dir / "four.yaml").string(), four);
  Plan on_four = p;
  on_four.cluster = (dir / "four.yaml").string();
  strata::write_file_atomic((dir / "plan4.yaml").string(), strata::planner::plan_to_yaml(on_four));
  CmdResult nodes = run_strata("export --plan '" + (dir / "plan4.yaml").string() + "' --stack mcore-2024 --to megatron", dir);
  EXPECT_EQ(nodes.code, 0) << nodes.err;
  EXPECT_NE(nodes.out.find("--nnodes 2 --nproc_per_node 4"), std::string::npos) << nodes.out;
  CmdResult sbatch = run_strata(base + "--to megatron --launcher slurm", dir);
  EXPECT_EQ(sbatch.code, 0) << sbatch.err;
  EXPECT_NE(sbatch.out.find("#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"),
            std::string::npos)
      << sbatch.out;
  // The user's script: only the parallel flags change; the diff goes to stderr.
  const std::string job = (dir / "job.sh").string();
  strata::write_file_atomic(job, "# mine\ntorchrun pretrain_gpt.py --lr 1e-4 \\\n"
                                 "  --tensor-model-parallel-size 8 --pipeline-model-parallel-size 2\n");
  CmdResult patched = run_strata(base + "--to megatron --from '" + job + "'", dir);
  EXPECT_EQ(patched.code, 0) << patched.err;
  EXPECT_EQ(patched.out.rfind("# mine\ntorchrun pretrain_gpt.py --lr 1e-4 \\\n"
                              "  --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 ", 0),
            0u)
      << patched.out;
  EXPECT_NE(patched.err.find("job.sh:3: --tensor-model-parallel-size 8 -> 2"), std::string::npos)
      << patched.err;
  // The patched script never overwrites the script it patches.
  CmdResult over = run_strata(base + "--to megatron --from '" + job + "' --out '" + job + "'", dir);
  EXPECT_EQ(over.code, 2);
  EXPECT_NE(over.err.find("--from"), std::string::npos) << over.err;
  EXPECT_NE(over.err.find("--out"), std::string::npos) << over.err;
  EXPECT_EQ(strata::read_file(job).rfind("# mine\n", 0), 0u);
  // Bad input: one `error:` line naming the flag, exit 2.
  for (const std::string& bad :
       {base + "--to megatron --train-tokens 15X", base + "--to megatron --train-tokens ''",
        base + "--to megatron --launcher mpirun", base + "--to deepspeed --launcher slurm",
        base + "--to torchtitan --from '" + job + "'",
        base + "--to megatron --from '" + (dir / "nope.sh").string() + "'"}) {
    CmdResult r = run_strata(bad, dir);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << bad << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << bad << ": " << r.err;
  }
  fs::remove_all(dir);
}
#endif

#ifdef STRATA_EXE
namespace {
// simulate -> export -> simulate --from megatron: `strata simulate <flags> --stack mcore-2024
// --out <dir>/plan.yaml`, its Megatron-LM export to <dir>/args.sh, and that command line
// simulated again on the same cluster and stack: the plan written first and the second
// prediction (JSON; null after a failed step). Fails the test on any non-zero exit.
struct MegatronRoundTrip {
  Plan original;
  nlohmann::json again;
};
MegatronRoundTrip megatron_round_trip(const std::string& simulate_flags, const std::string& cluster,
                                      const std::filesystem::path& dir) {
  const std::string plan = (dir / "plan.yaml").string(), args = (dir / "args.sh").string();
  MegatronRoundTrip out;
  CmdResult sim = run_strata("simulate " + simulate_flags + " --cluster " + cluster +
                             " --stack mcore-2024 --format json --out '" + plan + "'", dir);
  EXPECT_EQ(sim.code, 0) << sim.err;
  CmdResult exp = run_strata("export --plan '" + plan + "' --to megatron --out '" + args + "'", dir);
  EXPECT_EQ(exp.code, 0) << exp.err;
  CmdResult again = run_strata("simulate --from megatron '" + args + "' --cluster " + cluster +
                                   " --stack mcore-2024 --format json", dir);
  EXPECT_EQ(again.code, 0) << again.err;
  if (sim.code != 0 || exp.code != 0 || again.code != 0) return out;
  out.original = strata::planner::load_plan(plan);
  out.again = strata::parse_json(again.out);
  return out;
}
// The job the --from tests read: a GQA Llama, interleaved (tp 2, pp 2, vpp 2, dp 2), ZeRO-1
// and SP on 8 GPUs, global batch 32, its Megatron-LM command under mcore-2024 (+ `extra`)
// written to <dir>/args.sh.
struct MegatronJob {
  Plan plan;
  strata::costmodel::SoftwareStack stack;
  std::string args;
};
MegatronJob write_megatron_job(const std::filesystem::path& dir, const std::string& extra) {
  std::filesystem::create_directories(dir);
  MegatronJob job{make_plan(llama(8), 2, 2, 2, 2, 1, 32), strata::costmodel::load_software_stack("mcore-2024"),
                  (dir / "args.sh").string()};
  job.plan.strategy.zero = 1;
  job.plan.strategy.sequence_parallel = true;
  strata::write_file_atomic(job.args, export_megatron(job.plan, job.stack) + extra);
  return job;
}
}  // namespace

TEST(SimulateFrom, PredictsTheJobOfAMegatronCommandLineAndRefusesByName) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("strata_from_test_" + std::to_string(::getpid()));
  const MegatronJob job = write_megatron_job(dir, "  --lr 1e-4\n");
  const Plan& p = job.plan;
  const auto& stack = job.stack;
  const std::string& args = job.args;
  // One more flag on a line of its own: the import reads the file as one command.
  CmdResult r = run_strata("simulate --from megatron '" + args + "' --cluster dgx-a100 --format json", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = strata::parse_json(r.out);
  EXPECT_EQ(j["gpus"], 8);
  EXPECT_EQ(j["strategy"]["dp"], 2);
  EXPECT_EQ(j["strategy"]["tp"], 2);
  EXPECT_EQ(j["strategy"]["pp"], 2);
  EXPECT_EQ(j["strategy"]["vpp"], 2);
  EXPECT_EQ(j["strategy"]["zero"], 1);
  EXPECT_EQ(j["strategy"]["global_batch"], 32);
  EXPECT_EQ(j["strategy"]["sequence_parallel"], true);
  EXPECT_EQ(j["strategy"]["schedule"], "interleaved");
  EXPECT_NE(r.out.find("--lr"), std::string::npos) << "the ignored flag is listed";

  // --gpus must agree with the torchrun world size; layout flags conflict with the file.
  CmdResult gpus = run_strata("simulate --from megatron '" + args + "' --cluster dgx-a100 --gpus 16", dir);
  EXPECT_EQ(gpus.code, 2);
  EXPECT_EQ(gpus.err.rfind("error: ", 0), 0u) << gpus.err;
  CmdResult tp = run_strata("simulate --from megatron '" + args + "' --cluster dgx-a100 --tp 4", dir);
  EXPECT_EQ(tp.code, 2);
  EXPECT_NE(tp.err.find("--tp conflicts with --from megatron"), std::string::npos) << tp.err;

  strata::write_file_atomic(args, export_megatron(p, stack) + "  --moe-router-num-groups 8\n");
  CmdResult moe = run_strata("simulate --from megatron '" + args + "' --cluster dgx-a100", dir);
  EXPECT_EQ(moe.code, 2);
  EXPECT_NE(moe.err.find("--moe-router-num-groups"), std::string::npos) << moe.err;
  EXPECT_EQ(std::count(moe.err.begin(), moe.err.end(), '\n'), 1) << moe.err;

  // DeepSpeed: the config gives dp, pp and batches; --model and --tp the rest.
  const std::string ds = (dir / "ds.json").string();
  strata::write_file_atomic(ds, export_deepspeed(p, stack));
  CmdResult d = run_strata("simulate --from deepspeed '" + ds +
                               "' --model llama2-7b --tp 2 --cluster dgx-a100 --format json", dir);
  ASSERT_EQ(d.code, 0) << d.err;
  const auto dj = strata::parse_json(d.out);
  EXPECT_EQ(dj["strategy"]["dp"], 2);
  EXPECT_EQ(dj["strategy"]["tp"], 2);
  EXPECT_EQ(dj["strategy"]["pp"], 2);
  EXPECT_EQ(dj["strategy"]["zero"], 1);
  // End to end: a plan simulated from flags, exported, and simulated again from the exported
  // command predicts the same step (same model, layout, stage map and stack settings).
  const MegatronRoundTrip rt = megatron_round_trip(
      "--model llama2-7b --tp 2 --pp 4 --vpp 2 --dp 2 --global-batch 64 --zero 1 "
      "--sequence-parallel --recompute selective", "dgx-a100", dir);
  ASSERT_FALSE(rt.again.is_null());
  EXPECT_EQ(rt.again["prediction"]["iteration_s"].get<double>(), rt.original.prediction.iteration_s);
  EXPECT_EQ(rt.again["stage_layers"], nlohmann::json(rt.original.stage_layers));

  CmdResult no_model = run_strata("simulate --from deepspeed '" + ds + "' --cluster dgx-a100", dir);
  EXPECT_EQ(no_model.code, 2);
  EXPECT_NE(no_model.err.find("--model"), std::string::npos) << no_model.err;
  fs::remove_all(dir);
}

// plan --from megatron: the search takes the job's model, world size and batch; the job's
// own layout comes back as "job", predicted as `simulate --from` predicts it, and the
// note compares it with the first plan (which is never slower unless the job's layout is
// outside the searched space).
TEST(PlanFrom, SearchesTheImportedJobAndComparesItsOwnLayout) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("strata_plan_from_test_" + std::to_string(::getpid()));
  const MegatronJob job = write_megatron_job(dir, "");
  const Plan& p = job.plan;
  const auto& stack = job.stack;
  const std::string& args = job.args;
  CmdResult plan = run_strata("plan --from megatron '" + args + "' --cluster dgx-a100 --top 3 --format json", dir);
  ASSERT_EQ(plan.code, 0) << plan.err;
  const auto j = strata::parse_json(plan.out);
  EXPECT_EQ(j["gpus"], 8);
  EXPECT_EQ(j["global_batch"], 32);
  ASSERT_TRUE(j.contains("job")) << plan.out;
  EXPECT_EQ(j["job"]["strategy"]["tp"], 2);
  EXPECT_EQ(j["job"]["strategy"]["pp"], 2);
  EXPECT_EQ(j["job"]["strategy"]["vpp"], 2);
  EXPECT_EQ(j["job"]["strategy"]["dp"], 2);
  CmdResult sim = run_strata("simulate --from megatron '" + args + "' --cluster dgx-a100 --format json", dir);
  ASSERT_EQ(sim.code, 0) << sim.err;
  EXPECT_EQ(j["job"]["prediction"]["iteration_s"], strata::parse_json(sim.out)["prediction"]["iteration_s"]);
  for (const auto& plan_j : j["plans"]) {
    EXPECT_EQ(plan_j["strategy"]["global_batch"], 32);
    EXPECT_EQ(plan_j["gpus"], 8);
  }
  const double job_s = j["job"]["prediction"]["iteration_s"], best_s = j["plans"][0]["prediction"]["iteration_s"];
  EXPECT_LE(best_s, job_s * 1.0005) << "the job's layout is in the searched space";
  ASSERT_FALSE(j["notes"].empty());
  EXPECT_EQ(j["notes"][0].get<std::string>().rfind("your job from " + args, 0), 0u) << j["notes"][0];
  // The table shows the comparison among the short notes.
  CmdResult table = run_strata("plan --from megatron '" + args + "' --cluster dgx-a100 --top 1", dir);
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("# note: your job from"), std::string::npos) << table.out;
  // The job file sets the batch and the world size: conflicts are refused by name.
  for (const auto& [flags, says] : std::vector<std::pair<std::string, std::string>>{
           {"--global-batch 64", "--global-batch conflicts with --from megatron"},
           {"--gpus 16", "disagrees"},
           {"--gpus 8,16", "one count"},
           {"--model llama2-7b", "--model conflicts with --from megatron"}}) {
    CmdResult bad = run_strata("plan --from megatron '" + args + "' --cluster dgx-a100 " + flags, dir);
    EXPECT_EQ(bad.code, 2) << flags;
    EXPECT_NE(bad.err.find(says), std::string::npos) << flags << ": " << bad.err;
    // One error line; a Debug build (the sanitizer preset) may warn before it.
    std::istringstream lines(bad.err);
    int non_warning = 0;
    for (std::string l; std::getline(lines, l);) non_warning += l.rfind("warning: ", 0) != 0;
    EXPECT_EQ(non_warning, 1) << bad.err;
  }
  // DeepSpeed: --model completes the job.
  const std::string ds = (dir / "ds.json").string();
  strata::write_file_atomic(ds, export_deepspeed(p, stack));
  CmdResult d = run_strata("plan --from deepspeed '" + ds + "' --model llama2-7b --tp 2 --cluster dgx-a100 "
                           "--format json --top 1", dir);
  ASSERT_EQ(d.code, 0) << d.err;
  const auto dj = strata::parse_json(d.out);
  EXPECT_EQ(dj["job"]["strategy"]["tp"], 2);
  EXPECT_EQ(dj["job"]["strategy"]["pp"], 2);
  EXPECT_EQ(dj["plans"][0]["strategy"]["tp"], 2) << "--tp stays a search restriction";
  fs::remove_all(dir);
}

TEST(SimulateFrom, AContextParallelZero3PlanPredictsTheSameStepAfterAMegatronExport) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("strata_from_cp_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string plan = (dir / "plan.yaml").string();
  const MegatronRoundTrip rt = megatron_round_trip(
      "--model llama2-7b --tp 2 --cp 2 --pp 2 --dp 2 --global-batch 32 --zero 3 --sequence-parallel",
      "dgx-a100", dir);
  ASSERT_FALSE(rt.again.is_null());
  EXPECT_EQ(rt.again["gpus"], 16);
  EXPECT_EQ(rt.again["strategy"]["cp"], 2);
  EXPECT_EQ(rt.again["strategy"]["zero"], 3);
  EXPECT_EQ(rt.again["prediction"]["iteration_s"].get<double>(), rt.original.prediction.iteration_s);
  // DeepSpeed cannot run it: one error line naming context parallelism, exit 2.
  CmdResult ds = run_strata("export --plan '" + plan + "' --to deepspeed", dir);
  EXPECT_EQ(ds.code, 2);
  EXPECT_EQ(ds.err.rfind("error: ", 0), 0u) << ds.err;
  EXPECT_NE(ds.err.find("context parallelism (cp 2)"), std::string::npos) << ds.err;
  fs::remove_all(dir);
}

// simulate -> export -> simulate --from megatron predicts the same step for MoE (Mixtral,
// DeepSeek-V3 with MLA), FP8 and an MoE layout in FP8-free bf16; DeepSpeed's JSON export of an
// MoE plan names the model-code layer on stderr.
TEST(SimulateFrom, MoeMlaAndFp8PlansPredictTheSameStepAfterAMegatronExport) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("strata_from_moe_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string plan = (dir / "plan.yaml").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"mixtral", "--model mixtral-8x7b --tp 2 --pp 4 --dp 4 --ep 8 --global-batch 64 --zero 1 "
                  "--sequence-parallel --seq 4096"},
      {"deepseek-v3", "--model deepseek-v3 --tp 2 --pp 8 --dp 32 --ep 64 --global-batch 1024 "
                      "--zero 1 --sequence-parallel --recompute full"},
      {"fp8", "--model llama2-7b --tp 2 --pp 2 --dp 2 --global-batch 32 --zero 1 "
              "--sequence-parallel --precision fp8"}};
  for (const auto& [what, flags] : cases) {
    SCOPED_TRACE(what);
    const MegatronRoundTrip rt = megatron_round_trip(flags, "dgx-h100", dir);
    ASSERT_FALSE(rt.again.is_null());
    EXPECT_EQ(rt.again["strategy"]["ep"], rt.original.strategy.ep);
    EXPECT_EQ(rt.again["prediction"]["iteration_s"].get<double>(), rt.original.prediction.iteration_s);
    EXPECT_EQ(rt.again["prediction"]["peak_memory_gib"].get<double>(),
              rt.original.prediction.peak_memory_gib);
  }
  // The last plan trains in FP8: DeepSpeed cannot, by name.
  CmdResult ds_fp8 = run_strata("export --plan '" + plan + "' --to deepspeed", dir);
  EXPECT_EQ(ds_fp8.code, 2);
  EXPECT_NE(ds_fp8.err.find("trains in FP8"), std::string::npos) << ds_fp8.err;
  // A DeepSpeed-expressible MoE plan (ep 8 inside dp 16, tp 1): the JSON on stdout, the
  // model-code layer on stderr.
  CmdResult sim = run_strata("simulate --model mixtral-8x7b --dp 16 --ep 8 --seq 4096 "
                             "--global-batch 64 --zero 1 --cluster dgx-h100 --stack mcore-2024 "
                             "--out '" + plan + "'", dir);
  ASSERT_EQ(sim.code, 0) << sim.err;
  CmdResult ds = run_strata("export --plan '" + plan + "' --to deepspeed", dir);
  EXPECT_EQ(ds.code, 0) << ds.err;
  EXPECT_EQ(strata::parse_json(ds.out)["train_batch_size"], 64);
  EXPECT_NE(ds.err.find("deepspeed.moe.layer.MoE("), std::string::npos) << ds.err;
  EXPECT_NE(ds.err.find("ep_size=8"), std::string::npos) << ds.err;
  // Read back with the expert layout DeepSpeed keeps in model code (--ep): the same step.
  const std::string ds_json = (dir / "ds.json").string();
  strata::write_file_atomic(ds_json, ds.out);
  CmdResult back = run_strata("simulate --from deepspeed '" + ds_json + "' --model mixtral-8x7b "
                              "--seq 4096 --ep 8 --gpus 16 --cluster dgx-h100 --stack mcore-2024 "
                              "--format json", dir);
  ASSERT_EQ(back.code, 0) << back.err;
  const auto bj = strata::parse_json(back.out);
  EXPECT_EQ(bj["strategy"]["ep"], 8);
  EXPECT_EQ(bj["strategy"]["dp"], 16);
  EXPECT_EQ(bj["prediction"]["iteration_s"].get<double>(),
            strata::planner::load_plan(plan).prediction.iteration_s);
  fs::remove_all(dir);
}
#endif
