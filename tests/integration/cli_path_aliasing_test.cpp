// One output-path rule for every command (common/output_file.h check_path_aliasing): an output
// that is the same file as one of the command's inputs, or as another of its outputs, is
// refused with one `error:` line naming both flags and exit 2, before anything is
// written: every file in the run's folder is byte-identical afterwards and no file is
// added. "Same file" covers the same name, another spelling (`./x`, `sub/../x`), a
// symbolic link, a hard link, and a HuggingFace model folder's config.json. The
// accepted cases beside them (distinct files, /dev/null twice, a catalog name) still
// exit 0.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/integration/cli_run.h"

namespace fs = std::filesystem;
using strata::testing::read_all;
using strata::testing::run_strata;

namespace {

struct AliasCase {
  std::string name;
  std::vector<std::string> args;  // run in the case's temp folder: relative paths name its files
  std::vector<std::string> flags;  // named in the error; empty: the command must succeed
};

void PrintTo(const AliasCase& c, std::ostream* os) { *os << c.name; }

std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A small strategy of the copied tiny model on the copied DGX A100 cluster.
const std::vector<std::string> kSim = {"simulate", "--model", "model.yaml", "--cluster", "cluster.yaml",
                                       "--tp", "2", "--pp", "2", "--dp", "1", "--global-batch", "8"};
const std::vector<std::string> kPlan = {"plan", "--model", "model.yaml", "--cluster", "cluster.yaml",
                                        "--gpus", "4", "--global-batch", "8", "--top", "1"};
const std::vector<std::string> kCompare = {"compare", "--model", "model.yaml", "--cluster", "cluster.yaml",
                                           "--gpus", "4", "--global-batch", "8", "--top", "2"};
const std::vector<std::string> kTrain = {"train", "--plan", "plan.yaml", "--steps", "1"};

std::vector<AliasCase> alias_cases() {
  return {
      // validate --keep-dir writes plan-N.yaml / .jsonl / .log: not over a --plans file there,
      // nor over a user's file of that name (refused before any job is launched).
      {"validate_keep_dir_over_plans",
       {"validate", "--plans", "plan-1.yaml", "--keep-dir", ".", "--np", "1", "--steps", "3"},
       {"--keep-dir", "--plans"}},
      {"validate_keep_dir_over_a_users_file",
       {"validate", "--plans", "plan.yaml", "plan.yaml", "--keep-dir", "sub", "--np", "1", "--steps", "3"},
       {"--keep-dir", "--force"}},
      // train: the metrics file over the corpus, the token file, the plan.
      {"train_metrics_over_text", cat(kTrain, {"--text", "corpus.txt", "--metrics", "corpus.txt"}),
       {"--metrics", "--text"}},
      {"train_metrics_over_data", cat(kTrain, {"--data", "tokens.bin", "--metrics", "tokens.bin"}),
       {"--metrics", "--data"}},
      {"train_metrics_over_plan", cat(kTrain, {"--synthetic", "--metrics", "./plan.yaml"}),
       {"--metrics", "--plan"}},
      {"train_metrics_symlink_to_text", cat(kTrain, {"--text", "corpus.txt", "--metrics", "corpus.link"}),
       {"--metrics", "--text"}},
      {"train_metrics_hardlink_to_text", cat(kTrain, {"--text", "corpus.txt", "--metrics", "corpus.hard"}),
       {"--metrics", "--text"}},
      {"train_metrics_over_grad_norms", cat(kTrain, {"--synthetic", "--metrics", "m.jsonl",
                                                      "--debug-grad-norms", "sub/../m.jsonl"}),
       {"--metrics", "--debug-grad-norms"}},
      // export: the export over its plan or stack.
      {"export_out_over_plan", {"export", "--plan", "plan.yaml", "--to", "megatron", "--out", "plan.yaml"},
       {"--out", "--plan"}},
      {"export_out_over_stack",
       {"export", "--plan", "plan.yaml", "--to", "megatron", "--stack", "stack.yaml", "--out", "stack.yaml"},
       {"--out", "--stack"}},
      // plan: --out / --trace over each model/cluster input, and over each other.
      {"plan_out_over_model", cat(kPlan, {"--out", "model.yaml"}), {"--out", "--model"}},
      {"plan_out_over_cluster", cat(kPlan, {"--out", "cluster.yaml"}), {"--out", "--cluster"}},
      {"plan_trace_over_profile", cat(kPlan, {"--profile", "profile.yaml", "--trace", "profile.yaml"}),
       {"--trace", "--profile"}},
      {"plan_out_over_stack", cat(kPlan, {"--stack", "stack.yaml", "--out", "stack.yaml"}),
       {"--out", "--stack"}},
      {"plan_out_is_trace", cat(kPlan, {"--out", "x.json", "--trace", "x.json"}), {"--out", "--trace"}},
      {"plan_report_over_model", {"plan", "--model", "model.yaml", "--cluster", "cluster.yaml", "--gpus", "4,8",
                                  "--global-batch", "8", "--report", "model.yaml"},
       {"--report", "--model"}},
      {"plan_report_is_out", {"plan", "--model", "model.yaml", "--cluster", "cluster.yaml", "--gpus", "4,8",
                              "--global-batch", "8", "--out", "x.html", "--report", "x.html"},
       {"--out", "--report"}},
      {"plan_out_and_trace_stdout", cat(kPlan, {"--out", "-", "--trace", "-"}), {"--out", "--trace"}},
      {"plan_out_over_hf_folder",
       {"plan", "--model", "hf", "--cluster", "cluster.yaml", "--gpus", "4", "--global-batch", "8",
        "--out", "hf/config.json"},
       {"--out", "--model"}},
      // simulate: --trace over the model, --out over the cluster, the two outputs alike,
      // the imported job file.
      {"simulate_trace_over_model", cat(kSim, {"--trace", "model.yaml"}), {"--trace", "--model"}},
      {"simulate_out_over_cluster", cat(kSim, {"--out", "cluster.yaml"}), {"--out", "--cluster"}},
      {"simulate_out_is_trace", cat(kSim, {"--out", "x.json", "--trace", "x.json"}), {"--out", "--trace"}},
      {"simulate_out_is_trace_symlink", cat(kSim, {"--out", "plan2.yaml", "--trace", "dangling.link"}),
       {"--out", "--trace"}},
      {"simulate_out_and_trace_stdout", cat(kSim, {"--out", "-", "--trace", "-"}), {"--out", "--trace"}},
      {"simulate_out_over_job_file",
       {"simulate", "--from", "megatron", "job.sh", "--out", "job.sh"}, {"--out", "--from"}},
      // compare: the report over the model, the strategies list, the measured results.
      {"compare_report_over_model", cat(kCompare, {"--report", "model.yaml"}), {"--report", "--model"}},
      // --out is compare's --report under the name every other command uses.
      {"compare_out_over_cluster", cat(kCompare, {"--out", "cluster.yaml"}), {"--report", "--cluster"}},
      {"compare_report_over_strategies",
       {"compare", "--model", "model.yaml", "--cluster", "cluster.yaml", "--gpus", "4", "--strategies",
        "strategies.yaml", "--report", "strategies.yaml"},
       {"--report", "--strategies"}},
      {"compare_report_over_measured",
       {"compare", "--model", "model.yaml", "--cluster", "cluster.yaml", "--measured", "measured.json",
        "--report", "measured.json"},
       {"--report", "--measured"}},
      // calibrate: the profile over the training log, the job, the model.
      {"calibrate_out_over_log",
       {"calibrate", "--from-log", "job.log", "--job", "job.sh", "--cluster", "dgx-h100", "--out", "job.log"},
       {"--out", "--from-log"}},
      {"calibrate_out_over_job",
       {"calibrate", "--from-log", "job.log", "--job", "job.sh", "--cluster", "dgx-h100", "--out", "job.sh"},
       {"--out", "--job"}},
      {"calibrate_out_over_runs",
       {"calibrate", "--from-runs", "runs.yaml", "--out", "runs.yaml"},
       {"--out", "--from-runs"}},
      {"calibrate_out_over_model",
       {"calibrate", "--backend", "cpu", "--quick", "--model", "model.yaml", "--out", "model.yaml"},
       {"--out", "--model"}},
      // Accepted: distinct files, the null device twice, a catalog name that is no file here.
      {"simulate_distinct_outputs_ok", cat(kSim, {"--out", "plan2.yaml", "--trace", "trace.json"}), {}},
      {"simulate_dev_null_twice_ok", cat(kSim, {"--out", "/dev/null", "--trace", "/dev/null"}), {}},
      {"export_distinct_ok", {"export", "--plan", "plan.yaml", "--to", "megatron", "--out", "args.sh"}, {}},
      {"plan_catalog_name_ok",
       {"plan", "--model", "tiny", "--cluster", "dgx-a100", "--gpus", "4", "--global-batch", "8", "--out", "tiny"},
       {}},
  };
}

std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const fs::path rel = fs::relative(e.path(), dir);
    if (e.is_symlink()) files[rel.string()] = "-> " + fs::read_symlink(e.path()).string();
    else if (e.is_regular_file()) files[rel.string()] = read_all(e.path().string());
  }
  return files;
}

void copy_in(const char* from, const fs::path& to) {
  fs::copy_file(fs::path(STRATA_SOURCE_DIR) / from, to, fs::copy_options::overwrite_existing);
}

// The inputs every case may name, in a fresh folder `dir`: copies of catalog files, a
// corpus with a symbolic and a hard link to it, a HuggingFace model folder, a dangling
// link, and a one-rank plan of the tiny model for train and export.
void make_inputs(const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir / "sub");
  fs::create_directories(dir / "hf");
  copy_in("models/catalog/tiny.yaml", dir / "model.yaml");
  copy_in("costmodel/hardware/clusters/dgx-a100.yaml", dir / "cluster.yaml");
  copy_in("costmodel/hardware/profiles/a100-sxm-80gb-fitted.yaml", dir / "profile.yaml");
  copy_in("costmodel/stacks/megatron-2022.yaml", dir / "stack.yaml");
  copy_in("tests/calibration/fixtures/job-a.sh", dir / "job.sh");
  copy_in("tests/calibration/fixtures/job-a.log", dir / "job.log");
  std::ofstream(dir / "hf" / "config.json")
      << R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,)"
         R"( "intermediate_size": 688, "num_attention_heads": 4, "num_key_value_heads": 4,)"
         R"( "num_hidden_layers": 4, "vocab_size": 1024, "max_position_embeddings": 256})";
  std::ofstream(dir / "corpus.txt") << "the training corpus, which no command may overwrite\n";
  std::ofstream(dir / "tokens.bin") << "token file bytes";
  std::ofstream(dir / "strategies.yaml") << "strategies:\n  - {tp: 2, pp: 2}\n  - {tp: 4, pp: 1}\n";
  std::ofstream(dir / "measured.json") << "{\"measured\": \"results\"}\n";
  std::ofstream(dir / "runs.yaml") << "runs: []\n";
  fs::create_symlink("corpus.txt", dir / "corpus.link");
  fs::create_hard_link(dir / "corpus.txt", dir / "corpus.hard");
  fs::create_symlink("plan2.yaml", dir / "dangling.link");
  // A one-rank plan of the tiny model on this host, for train and export.
  auto p = run_strata({"simulate", "--model", "tiny", "--cluster", "local-cpu", "--tp", "1", "--pp", "1",
                       "--dp", "1", "--global-batch", "2", "--out", "plan.yaml"},
                      120, dir.string());
  ASSERT_EQ(p.exit_code, 0) << p.err;
  fs::copy_file(dir / "plan.yaml", dir / "plan-1.yaml");
  std::ofstream(dir / "sub" / "plan-2.jsonl") << "a user's own notes, named like validate's metrics\n";
}

class PathAliasingCli : public ::testing::TestWithParam<AliasCase> {};

TEST_P(PathAliasingCli, RefusesAnOutputThatIsAnInputOrAnotherOutput) {
  const AliasCase& c = GetParam();
  const fs::path dir = fs::temp_directory_path() /
                       ("strata_alias_" + std::to_string(::getpid()) + "_" + c.name);
  ASSERT_NO_FATAL_FAILURE(make_inputs(dir));
  const auto before = snapshot(dir);
  auto r = run_strata(c.args, 120, dir.string());
  SCOPED_TRACE("strata " + ::testing::PrintToString(c.args) + "\nstderr:\n" + r.err);
  ASSERT_FALSE(r.timed_out);
  ASSERT_FALSE(r.signaled) << "signal " << r.signal;
  if (c.flags.empty()) {
    EXPECT_EQ(r.exit_code, 0);
  } else {
    EXPECT_EQ(r.exit_code, 2);
    const std::vector<std::string> errors = r.error_lines();
    ASSERT_EQ(errors.size(), 1u);
    for (const auto& flag : c.flags)
      EXPECT_NE(errors[0].find(flag), std::string::npos) << "should name " << flag << ": " << errors[0];
    EXPECT_TRUE(r.out.empty()) << "printed on a refused run: " << r.out.substr(0, 200);
    EXPECT_EQ(snapshot(dir), before) << "a refused run changed or added files";
  }
  // Inputs survive an accepted run too.
  for (const char* f : {"model.yaml", "cluster.yaml", "plan.yaml", "corpus.txt"})
    EXPECT_EQ(snapshot(dir).at(f), before.at(f)) << f;
  fs::remove_all(dir);
}

// Property: every (command, input, output flag) slot below, with the output spelled as a
// random alias of the input (the same name, ./name, sub/../name, the absolute path, a new
// symbolic link, a new hard link), is refused naming both flags, and leaves every file as
// it was. Two outputs aliased the same ways are refused too.
TEST(PathAliasingProperty, RandomAliasesOfAnInputOrAnOutputAreRefused) {
  struct Slot {
    std::vector<std::string> args;  // the output flag's value is appended
    std::string input, in_flag, out_flag;
  };
  const std::vector<Slot> slots = {
      {cat(kTrain, {"--text", "corpus.txt", "--metrics"}), "corpus.txt", "--text", "--metrics"},
      {cat(kTrain, {"--synthetic", "--metrics"}), "plan.yaml", "--plan", "--metrics"},
      {{"export", "--plan", "plan.yaml", "--to", "megatron", "--out"}, "plan.yaml", "--plan", "--out"},
      {cat(kPlan, {"--out"}), "model.yaml", "--model", "--out"},
      {cat(kPlan, {"--trace"}), "cluster.yaml", "--cluster", "--trace"},
      {cat(kSim, {"--profile", "profile.yaml", "--out"}), "profile.yaml", "--profile", "--out"},
      {cat(kSim, {"--trace"}), "model.yaml", "--model", "--trace"},
      {cat(kCompare, {"--report"}), "cluster.yaml", "--cluster", "--report"},
      {{"calibrate", "--from-log", "job.log", "--job", "job.sh", "--cluster", "dgx-h100", "--out"}, "job.sh",
       "--job", "--out"},
      // Two outputs: --trace is the input slot's file (written first by the spelling).
      {cat(kSim, {"--trace", "fresh.json", "--out"}), "fresh.json", "--trace", "--out"},
  };
  const fs::path dir = fs::temp_directory_path() / ("strata_alias_property_" + std::to_string(::getpid()));
  ASSERT_NO_FATAL_FAILURE(make_inputs(dir));
  std::mt19937 rng(31337);
  for (int trial = 0; trial < 30; ++trial) {
    const Slot& slot = slots[std::uniform_int_distribution<std::size_t>(0, slots.size() - 1)(rng)];
    const int how = std::uniform_int_distribution<int>(0, 5)(rng);
    const bool exists = fs::exists(dir / slot.input);
    std::string out;
    switch (how) {
      case 0: out = slot.input; break;
      case 1: out = "./" + slot.input; break;
      case 2: out = "sub/../" + slot.input; break;
      case 3: out = (dir / slot.input).string(); break;
      case 4:
        out = "alias" + std::to_string(trial) + ".link";
        fs::create_symlink(slot.input, dir / out);
        break;
      default:
        out = "alias" + std::to_string(trial) + ".hard";
        if (!exists) {  // no file to link to: the name itself
          out = slot.input;
          break;
        }
        fs::create_hard_link(dir / slot.input, dir / out);
        break;
    }
    const auto before = snapshot(dir);
    const std::vector<std::string> args = cat(slot.args, {out});
    auto r = run_strata(args, 120, dir.string());
    SCOPED_TRACE("trial " + std::to_string(trial) + ": strata " + ::testing::PrintToString(args) +
                 "\nstderr:\n" + r.err);
    ASSERT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 2);
    const auto lines = r.err_lines();
    ASSERT_FALSE(lines.empty());
    EXPECT_NE(lines.front().find(slot.in_flag), std::string::npos) << lines.front();
    EXPECT_NE(lines.front().find(slot.out_flag), std::string::npos) << lines.front();
    EXPECT_EQ(snapshot(dir), before) << "a refused run changed or added files";
  }
  fs::remove_all(dir);
}

// Each command that writes files names what it reads and writes in one line of its help,
// and every output flag there is one the table above aliases.
TEST(PathAliasingHelp, EveryWritingCommandListsItsFiles) {
  const std::pair<const char*, std::vector<const char*>> commands[] = {
      {"plan", {"--model", "--out", "--trace", "--report"}},        {"simulate", {"--model", "--from", "--out", "--trace"}},
      {"compare", {"--strategies", "--measured", "--report"}}, {"export", {"--plan", "--out"}},
      {"train", {"--plan", "--text", "--metrics"}},       {"calibrate", {"--from-runs", "--from-log", "--job", "--out"}},
      {"validate", {"--plans", "--runs", "--keep-dir"}}};
  for (const auto& [cmd, flags] : commands) {
    auto r = run_strata({cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    const std::size_t at = r.out.find("Files: reads ");
    ASSERT_NE(at, std::string::npos) << cmd << " --help lists no files:\n" << r.out;
    const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    for (const char* f : flags) EXPECT_NE(line.find(f), std::string::npos) << cmd << ": " << line;
  }
}

INSTANTIATE_TEST_SUITE_P(Cli, PathAliasingCli, ::testing::ValuesIn(alias_cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
