// Table-driven bad-input test: every row runs the built `strata` binary on one kind of
// bad input and asserts exactly one `error:` line on stderr naming the field or flag,
// the exit code (2 bad input, 3 nothing fits), no crash / abort / sanitizer report, no
// hang, and no file left half-written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/integration/cli_run.h"

namespace fs = std::filesystem;
using strata::testing::run_strata;

namespace {

struct BadInput {
  std::string name;
  std::vector<std::string> args;               // "{dir}" is replaced by a fresh temp folder
  int exit_code;
  std::vector<std::string> mentions;           // substrings the error line must contain
  std::map<std::string, std::string> files;    // created in {dir} before the run
};

const char* kGoodModel =
    "name: test-model\nlayers: 4\nhidden: 256\nheads: 8\nvocab: 1000\nseq_len: 128\n";

std::string model_without(const std::string& key) {
  std::string out;
  std::string text = kGoodModel;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl - pos + 1);
    if (line.rfind(key + ":", 0) != 0) out += line;
    pos = nl + 1;
  }
  return out;
}

std::string model_with(const std::string& key, const std::string& value) {
  return model_without(key) + key + ": " + value + "\n";
}

std::vector<BadInput> cases() {
  const std::vector<std::string> plan_m = {"plan", "--model", "{dir}/m.yaml", "--cluster",
                                           "dgx-a100", "--gpus", "8"};
  auto with_model = [&](std::string name, std::string yaml, std::vector<std::string> mentions,
                        int code = 2) {
    return BadInput{std::move(name), plan_m, code, std::move(mentions), {{"m.yaml", std::move(yaml)}}};
  };
  return {
      // Names and files.
      {"unknown_model_suggests_close_name", {"plan", "--model", "gpt3-175"}, 2, {"--model", "gpt3-175b"}},
      {"unknown_cluster_suggests_close_name", {"plan", "--cluster", "dgx-a10"}, 2, {"--cluster", "dgx-a100"}},
      {"missing_model_file", {"plan", "--model", "{dir}/nope.yaml"}, 2, {"--model", "nope.yaml"}},
      {"missing_cluster_file", {"plan", "--cluster", "{dir}/nope.yaml"}, 2, {"--cluster", "nope.yaml"}},
      {"missing_profile_file", {"plan", "--profile", "{dir}/nope.yaml"}, 2, {"--profile", "nope.yaml"}},
      {"model_path_is_a_folder", {"plan", "--model", "{dir}"}, 2, {"--model"}},
      {"models_show_unknown_name", {"models", "show", "llama2-7"}, 2, {"llama2-7b"}},
      {"clusters_show_unknown_name", {"clusters", "show", "dgx-h10"}, 2, {"dgx-h100"}},
      // Malformed model files.
      with_model("malformed_yaml_model", "name: x\nlayers: [1, 2\n", {"m.yaml"}),
      with_model("empty_model_file", "", {"m.yaml"}),
      with_model("model_file_is_a_list", "- 1\n- 2\n", {"m.yaml"}),
      with_model("wrong_type_layers", model_with("layers", "four"), {"layers"}),
      with_model("wrong_type_hidden_float", model_with("hidden", "256.5"), {"hidden"}),
      with_model("missing_key_hidden", model_without("hidden"), {"hidden"}),
      with_model("unknown_key_typo", std::string(kGoodModel) + "hiden: 256\n", {"hiden"}),
      with_model("negative_layers", model_with("layers", "-4"), {"layers"}),
      with_model("zero_heads", model_with("heads", "0"), {"heads"}),
      with_model("hidden_not_divisible_by_heads", model_with("heads", "7"), {"heads"}),
      with_model("absurd_layers_1e9", model_with("layers", "1000000000"), {"layers"}),
      with_model("overflowing_hidden", model_with("hidden", "9223372036854775807"), {"hidden"}),
      with_model("int_beyond_64_bits", model_with("vocab", "99999999999999999999999"), {"vocab"}),
      {"malformed_hf_config", {"plan", "--model", "{dir}/config.json", "--gpus", "8"}, 2,
       {"config.json"}, {{"config.json", "{\"hidden_size\": 4096,"}}},
      {"hf_config_wrong_type", {"plan", "--model", "{dir}/config.json", "--gpus", "8"}, 2,
       {"hidden_size"},
       {{"config.json",
         "{\"model_type\": \"llama\", \"hidden_size\": \"big\", \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 64, \"vocab_size\": 100, "
         "\"max_position_embeddings\": 64}"}}},
      {"malformed_cluster_file", {"plan", "--cluster", "{dir}/c.yaml"}, 2, {"c.yaml"},
       {{"c.yaml", "name: c\ndevice: [\n"}}},
      {"cluster_negative_nodes", {"plan", "--cluster", "{dir}/c.yaml"}, 2, {"nodes"},
       {{"c.yaml",
         "name: c\ndevice: a100-sxm-80gb\ngpus_per_node: 8\nnodes: -1\n"
         "intra_node: {bandwidth_gbps: 300, latency_us: 3, source: {kind: estimate, ref: t}}\n"
         "inter_node: {bandwidth_gbps: 25, latency_us: 8, source: {kind: estimate, ref: t}}\n"}}},
      // Flags.
      {"unknown_flag", {"plan", "--frobnicate"}, 2, {"--frobnicate"}},
      {"unknown_format", {"plan", "--format", "xml"}, 2, {"--format", "xml"}},
      {"unknown_command", {"frobnicate"}, 2, {"frobnicate"}},
      {"no_command", {}, 2, {"command"}},
      {"gpus_zero", {"plan", "--gpus", "0"}, 2, {"--gpus"}},
      {"gpus_negative", {"plan", "--gpus", "-8"}, 2, {"--gpus"}},
      {"gpus_not_a_number", {"plan", "--gpus", "many"}, 2, {"--gpus"}},
      {"gpus_beyond_int", {"plan", "--gpus", "99999999999"}, 2, {"--gpus"}},
      {"gpus_1e9_exceeds_cluster", {"plan", "--gpus", "1000000000"}, 2, {"gpus"}},
      {"seq_zero", {"plan", "--seq", "0"}, 2, {"--seq"}},
      {"top_zero", {"plan", "--top", "0"}, 2, {"--top"}},
      {"global_batch_negative", {"plan", "--global-batch", "-1"}, 2, {"--global-batch"}},
      {"unknown_recompute", {"simulate", "--recompute", "sometimes"}, 2, {"--recompute"}},
      {"unknown_schedule", {"plan", "--schedule", "zigzag"}, 2, {"--schedule"}},
      {"zero_stage_out_of_range", {"simulate", "--zero", "4"}, 2, {"--zero"}},
      // Strategies.
      {"heads_not_divisible_by_tp", {"simulate", "--tp", "7", "--pp", "1", "--dp", "1"}, 2, {"tp", "heads"}},
      {"gpus_not_dp_tp_pp", {"simulate", "--gpus", "64", "--tp", "8", "--pp", "2", "--dp", "2"}, 2,
       {"--gpus", "32"}},
      {"gpus_not_divisible_by_tp_pp", {"simulate", "--gpus", "100", "--tp", "8", "--pp", "2"}, 2,
       {"--gpus", "16"}},
      {"global_batch_not_divisible",
       {"simulate", "--tp", "8", "--pp", "1", "--dp", "4", "--global-batch", "6"}, 2, {"global_batch"}},
      {"pp_more_than_layers", {"simulate", "--tp", "8", "--pp", "128", "--dp", "1"}, 2, {"pp"}},
      {"strategy_exceeds_cluster", {"simulate", "--tp", "8", "--pp", "1", "--dp", "1000000"}, 2,
       {"cluster"}},
      {"absurd_dp_overflows_nothing", {"simulate", "--tp", "1048576", "--pp", "1048576", "--dp", "2147483647"},
       2, {"tp"}},
      // Outputs.
      {"unwritable_out_folder", {"plan", "--out", "{dir}/no/such/plan.yaml"}, 2, {"--out"}},
      {"out_is_a_folder", {"plan", "--out", "{dir}"}, 2, {"--out"}},
      {"unwritable_trace_folder", {"simulate", "--tp", "8", "--pp", "8", "--dp", "16", "--trace",
                                   "{dir}/no/t.json"}, 2, {"--trace"}},
      // Nothing fits.
      {"no_strategy_fits_memory", {"plan", "--model", "llama3-405b", "--cluster", "dgx-a100", "--gpus", "1"},
       3, {"memory", "GiB"}},
  };
}

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, AnswersWithOneErrorLineAndExitCode) {
  const BadInput& c = GetParam();
  fs::path dir = fs::temp_directory_path() / ("strata_bad_input_" + c.name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& [name, text] : c.files) std::ofstream(dir / name, std::ios::binary) << text;
  std::vector<std::string> args;
  for (std::string a : c.args) {
    for (size_t p; (p = a.find("{dir}")) != std::string::npos;) a.replace(p, 5, dir.string());
    args.push_back(a);
  }

  auto r = run_strata(args, 120);
  SCOPED_TRACE("strata " + ::testing::PrintToString(args) + "\nstderr:\n" + r.err);
  ASSERT_FALSE(r.timed_out) << "hung";
  ASSERT_FALSE(r.signaled) << "killed by signal " << r.signal;
  EXPECT_EQ(r.exit_code, c.exit_code);
  std::vector<std::string> errors;
  for (const auto& l : r.err_lines())
    if (l.rfind("error:", 0) == 0) errors.push_back(l);
  ASSERT_EQ(errors.size(), 1u) << "expected exactly one `error:` line";
  for (const auto& m : c.mentions) EXPECT_NE(errors[0].find(m), std::string::npos) << "should name " << m;
  for (const char* bad : {"terminate", "Aborted", "Segmentation", "AddressSanitizer",
                          "runtime error:", "internal:", "core dumped", "#0 "})
    EXPECT_EQ(r.err.find(bad), std::string::npos) << "stderr contains " << bad;
  // A failed command leaves nothing behind: the folder holds exactly the inputs.
  std::size_t entries = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, c.files.size()) << "a failed command left a file in " << dir;
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Cli, BadInputTest, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
