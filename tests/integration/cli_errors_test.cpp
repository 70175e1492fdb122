// Table-driven bad-input test: every row runs the built `strata` binary on one kind of
// bad input and asserts exactly one `error:` line on stderr naming the field or flag,
// the exit code (2 bad input, 3 nothing fits), no crash / abort / sanitizer report, no
// hang, and no file left half-written.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
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
  std::map<std::string, std::string> files = {};  // created in {dir} before the run
  // When set: {dir}/p.yaml is first written by `strata simulate --out` (a valid plan for
  // the tiny model, tp 2 x pp 2), then edited by hand: `from` replaced with `to`.
  std::pair<std::string, std::string> plan_edit = {};
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

BadInput plan_file(std::string name, std::vector<std::string> args, std::string from,
                   std::string to, std::vector<std::string> mentions) {
  return BadInput{std::move(name), std::move(args), 2, std::move(mentions), {},
                  {std::move(from), std::move(to)}};
}

// A small Llama-style config.json with `extra` keys appended.
std::string hf_llama(const std::string& extra) {
  return "{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
         "\"intermediate_size\": 172, \"vocab_size\": 100, \"max_position_embeddings\": 64, " +
         extra + "}";
}

// A measured a100-sxm-80gb profile with `extra` lines and the given memory bandwidth.
std::string profile_with(const std::string& extra, const std::string& bandwidth = "1800") {
  return "name: a100-sxm-80gb\nsource: {kind: measured, tool: strata calibrate, host: h}\n"
         "memory_gib: 80\nmemory_bandwidth_gbps: " + bandwidth + "\npeak_tflops: {bf16: 312}\n" + extra;
}

// A plan command on the model file m.yaml (`yaml`), refused with `code` and `mentions`.
BadInput with_model(std::string name, std::string yaml, std::vector<std::string> mentions, int code = 2) {
  return BadInput{std::move(name),
                  {"plan", "--model", "{dir}/m.yaml", "--cluster", "dgx-a100", "--gpus", "8"},
                  code,
                  std::move(mentions),
                  {{"m.yaml", std::move(yaml)}}};
}

// Names, files, flags, strategies, outputs and plan files edited into inconsistency.
std::vector<BadInput> input_cases() {
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
      // Plan files edited by hand into inconsistency (export and train read them).
      plan_file("plan_tp_not_dividing_heads", {"export", "--plan", "{dir}/p.yaml", "--to", "megatron",
                "--out", "{dir}/args.sh"}, "  tp: 2", "  tp: 3", {"--plan", "tp", "heads"}),
      plan_file("plan_stage_map_skips_a_layer", {"export", "--plan", "{dir}/p.yaml", "--to", "deepspeed",
                "--out", "{dir}/ds.json"}, "[3, 4, 5]", "[4, 5]", {"stage_layers"}),
      plan_file("plan_rank_grid_disagrees", {"export", "--plan", "{dir}/p.yaml", "--to", "torchtitan"},
                "rank_grid: {dp: 1", "rank_grid: {dp: 2", {"rank_grid"}),
      plan_file("plan_unknown_schedule", {"export", "--plan", "{dir}/p.yaml", "--to", "megatron"},
                "schedule: 1f1b", "schedule: zigzag", {"schedule", "zigzag"}),
  };
}

// Stored numbers no simulation gives, the other commands' flags, time to train, silent
// wrong answers.
std::vector<BadInput> stored_number_and_command_cases() {
  return {
      // Stored predictions no simulation gives (planner/plan.cpp read_prediction).
      plan_file("plan_negative_step_time_export", {"export", "--plan", "{dir}/p.yaml", "--to", "megatron"},
                "  iteration_s: ", "  iteration_s: -", {"--plan", "iteration_s"}),
      plan_file("plan_mfu_700_percent_train", {"train", "--plan", "{dir}/p.yaml", "--steps", "1"},
                "  mfu: ", "  mfu: 7 # was ", {"--plan", "mfu"}),
      plan_file("plan_unknown_key", {"export", "--plan", "{dir}/p.yaml", "--to", "megatron"},
                "schema_version: 1", "schema_version: 1\nextra_key: 1", {"extra_key"}),
      plan_file("plan_truncated_mid_model", {"export", "--plan", "{dir}/p.yaml", "--to", "megatron"},
                "  norm: layernorm", "  norm: laye", {"norm"}),
      plan_file("plan_cut_off_before_its_last_line", {"export", "--plan", "{dir}/p.yaml", "--to", "megatron"},
                "\nfits_memory: true", "", {"fits_memory", "truncated"}),
      plan_file("plan_fp8_on_an_a100_not_exported", {"export", "--plan", "{dir}/p.yaml", "--to", "megatron"},
                "  rank_order: tp-dp-pp", "  rank_order: tp-dp-pp\n  precision: fp8", {"precision", "fp8"}),
      plan_file("plan_fp8_not_trained", {"train", "--plan", "{dir}/p.yaml", "--steps", "1"},
                "  rank_order: tp-dp-pp", "  rank_order: tp-dp-pp\n  precision: fp8", {"precision", "fp8"}),
      plan_file("plan_precision_unknown", {"export", "--plan", "{dir}/p.yaml", "--to", "megatron"},
                "  rank_order: tp-dp-pp", "  rank_order: tp-dp-pp\n  precision: fp4", {"precision", "fp4"}),
      plan_file("plan_gpus_disagree", {"train", "--plan", "{dir}/p.yaml", "--steps", "1"},
                "\ngpus: 4", "\ngpus: 8", {"gpus"}),
      plan_file("plan_model_heads_edited", {"train", "--plan", "{dir}/p.yaml", "--steps", "1"},
                "  heads: 4", "  heads: 3", {"heads"}),
      plan_file("train_world_size_differs_from_plan", {"train", "--plan", "{dir}/p.yaml", "--steps", "1"},
                "", "", {"ranks"}),
      {"export_unknown_target", {"export", "--plan", "{dir}/p.yaml", "--to", "jax"}, 2, {"--to"}, {},
       {"\ngpus: 4", "\ngpus: 4"}},
      {"export_missing_plan", {"export", "--plan", "{dir}/nope.yaml", "--to", "megatron"}, 2,
       {"nope.yaml"}},
      // The other commands' flags.
      {"compare_top_zero", {"compare", "--top", "0"}, 2, {"--top"}},
      {"compare_missing_strategies_file", {"compare", "--strategies", "{dir}/nope.yaml"}, 2, {"--strategies"}},
      {"compare_unknown_format", {"compare", "--format", "pdf"}, 2, {"--format", "pdf"}},
      {"compare_unwritable_report", {"compare", "--report", "{dir}/no/r.html"}, 2, {"--report"}},
      // Time to train (plan, simulate, compare): refused before any search.
      {"train_tokens_unknown_suffix", {"plan", "--train-tokens", "15X"}, 2, {"--train-tokens", "15X"}},
      {"train_tokens_zero", {"simulate", "--train-tokens", "0"}, 2, {"--train-tokens", "at least one"}},
      {"train_tokens_negative", {"plan", "--train-tokens", "-5T"}, 2, {"--train-tokens", "-5T"}},
      {"train_tokens_empty", {"plan", "--train-tokens", ""}, 2, {"--train-tokens"}},
      {"train_tokens_nan", {"compare", "--train-tokens", "nan"}, 2, {"--train-tokens", "nan"}},
      {"train_tokens_beyond_1e18", {"plan", "--train-tokens", "1e19"}, 2, {"--train-tokens", "1e18"}},
      {"train_tokens_suffix_only", {"simulate", "--train-tokens", "T"}, 2, {"--train-tokens"}},
      {"goodput_zero", {"plan", "--train-tokens", "1T", "--goodput", "0"}, 2, {"--goodput", "0 < F <= 1"}},
      {"goodput_above_one", {"simulate", "--train-tokens", "1T", "--goodput", "1.5"}, 2, {"--goodput", "1.5"}},
      {"goodput_not_a_number", {"compare", "--train-tokens", "1T", "--goodput", "most"}, 2, {"--goodput", "most"}},
      {"goodput_without_tokens", {"plan", "--goodput", "0.9"}, 2, {"--goodput", "--train-tokens"}},
      {"price_negative", {"plan", "--train-tokens", "1T", "--gpu-hour-price", "-2"}, 2, {"--gpu-hour-price", "-2"}},
      {"price_infinite", {"simulate", "--train-tokens", "1T", "--gpu-hour-price", "inf"}, 2, {"--gpu-hour-price"}},
      {"price_without_tokens", {"compare", "--gpu-hour-price", "2"}, 2, {"--gpu-hour-price", "--train-tokens"}},
      {"validate_unknown_model", {"validate", "--model", "bogus"}, 2, {"--model", "bogus"}},
      {"validate_unknown_cluster", {"validate", "--cluster", "nope"}, 2, {"--cluster", "nope"}},
      {"calibrate_unwritable_out", {"calibrate", "--quick", "--out", "{dir}/no/p.yaml"}, 2, {"--out"}},
      {"calibrate_zero_tp_degree", {"calibrate", "--out", "{dir}/p.yaml", "--tp-degrees", "0"}, 2, {"--tp-degrees"}},
      {"calibrate_bad_max_bytes", {"calibrate", "--out", "{dir}/p.yaml", "--max-bytes", "lots"}, 2, {"--max-bytes"}},
      {"calibrate_unknown_backend", {"calibrate", "--out", "{dir}/p.yaml", "--backend", "tpu"}, 2, {"backend", "tpu"}},
      {"calibrate_unknown_dtype", {"calibrate", "--out", "{dir}/p.yaml", "--dtypes", "fp8"}, 2, {"fp8"}},
      {"train_missing_plan", {"train", "--plan", "{dir}/nope.yaml"}, 2, {"nope.yaml"}},
      {"train_negative_lr", {"train", "--plan", "{dir}/p.yaml", "--lr", "-1"}, 2, {"--lr"}, {},
       {"\ngpus: 4", "\ngpus: 4"}},
      {"train_unknown_lr_schedule", {"train", "--plan", "{dir}/p.yaml", "--lr-schedule", "cosin"}, 2,
       {"--lr-schedule", "cosin"}, {}, {"\ngpus: 4", "\ngpus: 4"}},
      {"train_min_lr_above_lr", {"train", "--plan", "{dir}/p.yaml", "--min-lr", "0.5"}, 2, {"--min-lr"}, {},
       {"\ngpus: 4", "\ngpus: 4"}},
      {"train_negative_grad_bucket", {"train", "--plan", "{dir}/p.yaml", "--grad-bucket-params", "-5"}, 2,
       {"--grad-bucket-params"}, {}, {"\ngpus: 4", "\ngpus: 4"}},
      {"train_unknown_backend", {"train", "--plan", "{dir}/p.yaml", "--backend", "tpu"}, 2, {"backend", "tpu"}, {},
       {"\ngpus: 4", "\ngpus: 4"}},
      // A 4-rank plan: the CUDA path runs one GPU (a CPU-only build says it has no CUDA).
      {"train_cuda_multi_rank_plan", {"train", "--plan", "{dir}/p.yaml", "--backend", "cuda"}, 2,
       {"--backend cuda"}, {}, {"\ngpus: 4", "\ngpus: 4"}},
      {"train_gemm_dtype_on_cpu", {"train", "--plan", "{dir}/p.yaml", "--gemm-dtype", "fp32"}, 2, {"--gemm-dtype"},
       {}, {"\ngpus: 4", "\ngpus: 4"}},
      {"train_decay_before_warmup", {"train", "--plan", "{dir}/p.yaml", "--lr-schedule", "linear", "--warmup-steps",
                                     "8", "--decay-steps", "4"},
       2, {"--decay-steps"}, {}, {"\ngpus: 4", "\ngpus: 4"}},
      // Silent wrong answers made loud (issue 16).
      with_model("duplicate_key_in_model_yaml", std::string(kGoodModel) + "layers: 8\n",
                 {"duplicate key 'layers' (first at line 2)"}),
      {"hf_config_encoder_decoder", {"plan", "--model", "{dir}/config.json", "--gpus", "8"}, 2,
       {"is_encoder_decoder"}, {{"config.json", hf_llama(R"("is_encoder_decoder": true)")}}},
      {"hf_config_unknown_model_type", {"plan", "--model", "{dir}/config.json", "--gpus", "8"}, 2,
       {"model_type 'falcon'"}, {{"config.json", hf_llama(R"("model_type": "falcon")")}}},
      {"hf_config_sliding_window", {"plan", "--model", "{dir}/config.json", "--gpus", "8"}, 2,
       {"sliding_window"}, {{"config.json", hf_llama(R"("model_type": "mistral", "sliding_window": 16)")}}},
      {"hf_config_duplicate_key", {"plan", "--model", "{dir}/config.json", "--gpus", "8"}, 2,
       {"duplicate key \"vocab_size\""}, {{"config.json", hf_llama(R"("vocab_size": 100)")}}},
      {"profile_of_another_device", {"plan", "--cluster", "dgx-a100", "--profile", "h100-sxm-80gb"}, 2,
       {"--profile", "h100-sxm-80gb", "a100-sxm-80gb"}},
      {"profile_measured_on_cpu_for_a_gpu", {"plan", "--cluster", "dgx-a100", "--profile", "local-cpu-measured"}, 2,
       {"--profile", "cpu backend"}},
      {"profile_gemm_faster_than_peak", {"plan", "--cluster", "dgx-a100", "--profile", "{dir}/p.yaml"}, 2,
       {"--profile", "above the device's peak"},
       {{"p.yaml", profile_with("gemm_table: {source: {kind: measured, tool: t, host: h}, rows: "
                                "[{m: 4096, n: 4096, k: 4096, dtype: bf16, time_us: 1}]}\n")}}},
      {"profile_duplicate_gemm_shape", {"plan", "--cluster", "dgx-a100", "--profile", "{dir}/p.yaml"}, 2,
       {"--profile", "duplicate GEMM shape 64x64x64 bf16"},
       {{"p.yaml", profile_with("gemm_table: {source: {kind: measured, tool: t, host: h}, rows: "
                                "[{m: 64, n: 64, k: 64, dtype: bf16, time_us: 10}, "
                                "{m: 64, n: 64, k: 64, dtype: bf16, time_us: 11}]}\n")}}},
      {"profile_reserve_above_memory", {"plan", "--cluster", "dgx-a100", "--profile", "{dir}/p.yaml"}, 2,
       {"--profile", "reserve_gib"}, {{"p.yaml", profile_with("reserve_gib: 80\n")}}},
      {"profile_absurd_bandwidth", {"plan", "--cluster", "dgx-a100", "--profile", "{dir}/p.yaml"}, 2,
       {"--profile", "memory_bandwidth_gbps"},
       {{"p.yaml", profile_with("", "2039000000")}}},
      {"cluster_absurd_link_bandwidth", {"plan", "--cluster", "{dir}/c.yaml"}, 2, {"bandwidth_gbps"},
       {{"c.yaml", "name: c\ndevice: a100-sxm-80gb\ngpus_per_node: 8\nnodes: 1\n"
                   "intra_node: {bandwidth_gbps: 1e9, latency_us: 3, source: {kind: estimate, ref: test}}\n"}}},
  };
}

// Device limits, calibrate, FP8, timeline bounds, validate, integer ranges, replaced files,
// stack limits, report formats, nothing fitting.
std::vector<BadInput> limit_and_format_cases() {
  return {
      // Cluster numbers checked against the device: NCCL's SMs are the device's; a link
      // latency of a second or more (1e308 us printed a 300-digit step time).
      {"cluster_comm_sms_beyond_the_device", {"plan", "--cluster", "{dir}/c.yaml"}, 2,
       {"comm_sms", "200", "108"},
       {{"c.yaml", "name: c\ndevice: a100-sxm-80gb\ngpus_per_node: 8\nnodes: 1\n"
                   "intra_node: {bandwidth_gbps: 300, latency_us: 3, comm_sms: 200,\n"
                   "  source: {kind: estimate, ref: test, comm_sms: test}}\n"}}},
      {"cluster_latency_1e308_us", {"plan", "--cluster", "{dir}/c.yaml"}, 2, {"latency_us", "1 s"},
       {{"c.yaml", "name: c\ndevice: a100-sxm-80gb\ngpus_per_node: 8\nnodes: 1\n"
                   "intra_node: {bandwidth_gbps: 300, latency_us: 1e308, source: {kind: estimate, ref: test}}\n"}}},
      {"cluster_latency_nan", {"plan", "--cluster", "{dir}/c.yaml"}, 2, {"latency_us"},
       {{"c.yaml", "name: c\ndevice: a100-sxm-80gb\ngpus_per_node: 8\nnodes: 1\n"
                   "intra_node: {bandwidth_gbps: 300, latency_us: .nan, source: {kind: estimate, ref: test}}\n"}}},
      // calibrate: CLI11's Range lets nan through; 0 meant "the default" silently.
      {"calibrate_sustain_nan", {"calibrate", "--sustain", "nan", "--out", "{dir}/p.yaml"}, 2, {"--sustain"}},
      {"calibrate_max_gemm_dim_zero", {"calibrate", "--max-gemm-dim", "0", "--out", "{dir}/p.yaml"}, 2,
       {"--max-gemm-dim"}},
      {"calibrate_row_sigma_nan", {"calibrate", "--from-runs", "{dir}/runs.yaml", "--row-sigma", "nan", "--out",
                                   "{dir}/p.yaml"}, 2, {"--row-sigma"}, {{"runs.yaml", "runs: []\n"}}},
      {"compare_measured_with_no_plans", {"compare", "--model", "tiny", "--cluster", "local-cpu", "--measured",
                                          "{dir}/m.json"}, 2, {"--measured", "empty"},
       {{"m.json", R"({"command": "validate", "model": "tiny", "cluster": "local-cpu", "ranks": 2, "plans": []})"}}},
      {"simulate_empty_out", {"simulate", "--model", "tiny", "--out", ""}, 2, {"--out", "empty"}},
      // DeepSpeed's pipeline engine runs ZeRO stage 1 at most (supports.zero_with_pp).
      {"simulate_deepspeed_zero3_with_pp",
       {"simulate", "--model", "tiny", "--cluster", "dgx-a100", "--stack", "deepspeed-2021-zero3", "--pp", "2",
        "--dp", "2", "--zero", "3"},
       2, {"deepspeed-2021-zero3", "ZeRO stage 3 with pipeline parallelism"}},
      // Megatron-Core delays the weight gradients only under the batch-level EP overlap.
      {"simulate_delay_wgrad_without_ep_overlap",
       {"simulate", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--stack", "mcore-2024-deepep", "--ep",
        "8", "--dp", "64", "--delay-wgrad"},
       2, {"strategy.delay_wgrad needs strategy.ep_overlap"}},
      // FP8 needs a device with an fp8 peak: the A100 has none.
      {"simulate_fp8_on_a100", {"simulate", "--model", "tiny", "--cluster", "dgx-a100", "--precision", "fp8"},
       2, {"fp8", "a100-sxm-80gb"}},
      {"plan_fp8_on_a100", {"plan", "--model", "tiny", "--cluster", "dgx-a100", "--gpus", "8", "--precision", "fp8"},
       2, {"fp8", "a100-sxm-80gb"}},
      {"precision_unknown", {"simulate", "--model", "tiny", "--cluster", "dgx-h100", "--precision", "fp4"},
       2, {"--precision", "fp4"}},
      {"plan_out_is_a_folder", {"plan", "--model", "tiny", "--gpus", "4", "--out", "{dir}"}, 2, {"--out", "folder"}},
      // Timelines bounded before they are built (planner/trace_bounds.h): the issue's pp 96 x
      // global batch 10,000 trace (6 GB of memory, 784 MB written before), a million
      // micro-batches, and compare's Gantt charts.
      {"simulate_trace_pp96_batch_10000",
       {"simulate", "--model", "gpt3-175b", "--cluster", "dgx-a100", "--tp", "8", "--pp", "96", "--dp", "1",
        "--global-batch", "10000", "--trace", "{dir}/t.json"},
       2, {"--trace", "MB", "--global-batch", "pp 96"}},
      {"simulate_trace_million_microbatches",
       {"simulate", "--model", "tiny", "--cluster", "dgx-a100", "--pp", "4", "--dp", "1", "--global-batch",
        "1048576", "--trace", "{dir}/t.json", "--out", "{dir}/p.yaml"},
       2, {"--trace", "200 MB"}},
      {"plan_trace_million_microbatches",
       {"plan", "--model", "tiny", "--cluster", "dgx-a100", "--gpus", "4", "--pp", "4", "--global-batch",
        "4194304", "--trace", "{dir}/t.json"},
       2, {"--trace", "200 MB"}},
      {"compare_gantt_all_over_bound",
       {"compare", "--model", "tiny", "--cluster", "dgx-a100", "--gpus", "4", "--strategies", "{dir}/s.yaml",
        "--gantt", "all", "--report", "{dir}/r.html"},
       2, {"--gantt all", "MB", "200 MB"},
       {{"s.yaml", "strategies:\n  - {pp: 4, global_batch: 1048576}\n  - {pp: 2, dp: 2, global_batch: 1048576}\n"}}},
      // validate: one error line, exit 2.
      {"validate_mpirun_missing", {"validate", "--mpirun", "{dir}/no-mpirun"}, 2, {"--mpirun", "no-mpirun"}},
      {"validate_no_plan_ran", {"validate", "--strata", "/bin/false", "--steps", "3", "--warmup", "1", "--top", "1"},
       2, {"none of the", "plans ran"}},
      // Integers beyond 64 bits are refused, not saturated; unsigned flags refuse negatives.
      {"train_steps_beyond_64_bits", {"train", "--plan", "p.yaml", "--steps", "99999999999999999999"}, 2,
       {"--steps", "99999999999999999999", "64-bit"}},
      {"train_seed_beyond_64_bits", {"train", "--plan", "p.yaml", "--seed", "18446744073709551616"}, 2,
       {"--seed", "18446744073709551616", "64-bit"}},
      {"train_seed_negative", {"train", "--plan", "p.yaml", "--seed", "-1"}, 2, {"--seed", "-1", "0 to"}},
      {"plan_global_batch_beyond_64_bits", {"plan", "--model", "tiny", "--global-batch", "-99999999999999999999"}, 2,
       {"--global-batch", "-99999999999999999999"}},
      // An existing file that strata did not write is not replaced without --force.
      {"plan_out_over_a_users_file",
       {"plan", "--model", "tiny", "--cluster", "local-cpu", "--gpus", "2", "--global-batch", "8", "--out",
        "{dir}/notes.txt"},
       2, {"--out", "notes.txt", "not a strata output", "--force"}, {{"notes.txt", "my notes\n"}}},
      {"compare_report_over_a_users_file",
       {"compare", "--model", "tiny", "--cluster", "local-cpu", "--gpus", "2", "--global-batch", "8", "--report",
        "{dir}/thesis.md"},
       2, {"--report", "thesis.md", "not a strata output"}, {{"thesis.md", "# Chapter 1\n"}}},
      // The H100/H200 default stack (NeMo 24.09-24.12 on Megatron-Core core_r0.9.0) has no
      // ZeRO-2/3: asked for, it is refused naming the stack (stacks with FSDP can run it).
      {"simulate_zero3_under_nemo_2024_perf",
       {"simulate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--dp", "8", "--zero", "3", "--global-batch",
        "64"},
       2, {"nemo-2024-perf", "ZeRO stage 3", "at most 1"}},
      {"plan_zero2_under_nemo_2024_perf",
       {"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--zero", "2", "--global-batch",
        "64"},
       2, {"nemo-2024-perf", "ZeRO stage 2"}},
      // Leading zeros are decimal (CLI11 alone reads 010 as octal 8).
      {"plan_gpus_leading_zero_is_decimal", {"plan", "--model", "tiny", "--cluster", "local-cpu", "--gpus", "010"},
       2, {"--gpus (10)"}},
      // The scaling and front pages are HTML: a .md name or stdout is refused, not filled with HTML.
      {"plan_scaling_report_markdown_name",
       {"plan", "--model", "tiny", "--cluster", "local-cpu", "--gpus", "1,2", "--report", "{dir}/s.md"},
       2, {"--report", "HTML"}},
      {"plan_front_report_stdout", {"plan", "--model", "tiny", "--cluster", "local-cpu", "--gpus", "2", "--front",
                                    "--report", "-"},
       2, {"--report -", "HTML"}},
      // Nothing fits.
      {"no_strategy_fits_memory", {"plan", "--model", "llama3-405b", "--cluster", "dgx-a100", "--gpus", "1"},
       3, {"memory", "GiB"}},
  };
}

std::vector<BadInput> cases() {
  std::vector<BadInput> all = input_cases();
  for (auto part : {stored_number_and_command_cases(), limit_and_format_cases()})
    all.insert(all.end(), part.begin(), part.end());
  return all;
}

void PrintTo(const BadInput& c, std::ostream* os) { *os << c.name; }

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, AnswersWithOneErrorLineAndExitCode) {
  const BadInput& c = GetParam();
  // The process id keeps two checkouts running the suite at once apart.
  fs::path dir = fs::temp_directory_path() /
                 ("strata_bad_input_" + std::to_string(::getpid()) + "_" + c.name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& [name, text] : c.files) std::ofstream(dir / name, std::ios::binary) << text;
  std::size_t inputs = c.files.size();
  const bool edit_plan = !c.plan_edit.first.empty() || c.name.find("world_size") != std::string::npos;
  if (edit_plan) {
    std::string p = (dir / "p.yaml").string();
    auto w = run_strata({"simulate", "--model", "tiny", "--cluster", "dgx-a100", "--tp", "2", "--pp",
                         "2", "--dp", "1", "--global-batch", "8", "--out", p});
    ASSERT_EQ(w.exit_code, 0) << w.err;
    std::string text = strata::testing::read_all(p);
    if (!c.plan_edit.first.empty()) {
      auto pos = text.find(c.plan_edit.first);
      ASSERT_NE(pos, std::string::npos) << "plan file lacks `" << c.plan_edit.first << "`:\n" << text;
      text.replace(pos, c.plan_edit.first.size(), c.plan_edit.second);
      std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
    }
    ++inputs;
  }
  std::vector<std::string> args;
  for (std::string a : c.args) {
    for (size_t p; (p = a.find("{dir}")) != std::string::npos;) a.replace(p, 5, dir.string());
    args.push_back(a);
  }

  // `strata train` starts MPI: in sanitizer builds, Open MPI's own allocations in
  // MPI_Init are suppressed for those runs (leak checking of strata's code stays on).
  std::vector<std::string> env;
  if (!args.empty() && args[0] == "train") env = strata::testing::mpi_child_env();
  auto r = run_strata(args, 120, "", env);
  SCOPED_TRACE("strata " + ::testing::PrintToString(args) + "\nstderr:\n" + r.err);
  ASSERT_FALSE(r.timed_out) << "hung";
  ASSERT_FALSE(r.signaled) << "killed by signal " << r.signal;
  EXPECT_EQ(r.exit_code, c.exit_code);
  const std::vector<std::string> errors = r.error_lines();
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
  EXPECT_EQ(entries, inputs) << "a failed command left a file in " << dir;
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Cli, BadInputTest, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// Absurd but well-formed sizes (1e6 layers, 1e9 GPUs): strata must answer, not hang or
// run out of memory. A clean answer is a result (exit 0), "bad input" (2) or "nothing
// fits" (3); whatever it is comes within the timeout and without a crash.
struct AbsurdSize {
  std::string name;
  std::vector<std::string> args;
  std::vector<int> exit_codes;
};

void PrintTo(const AbsurdSize& c, std::ostream* os) { *os << c.name; }

class AbsurdSizeTest : public ::testing::TestWithParam<AbsurdSize> {};

TEST_P(AbsurdSizeTest, AnswersWithinTheTimeout) {
  const AbsurdSize& c = GetParam();
  fs::path dir = fs::temp_directory_path() / ("strata_absurd_" + c.name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "layers.yaml")
      << "name: million-layers\nlayers: 1000000\nhidden: 256\nheads: 8\nvocab: 1000\nseq_len: 128\n";
  std::ofstream(dir / "huge.yaml")
      << "name: huge\ndevice: a100-sxm-80gb\ngpus_per_node: 64\nnodes: 16777216\n"
         "intra_node: {bandwidth_gbps: 300, latency_us: 3, source: {kind: estimate, ref: test}}\n"
         "inter_node: {bandwidth_gbps: 25, latency_us: 8, source: {kind: estimate, ref: test}}\n";
  std::vector<std::string> args;
  for (std::string a : c.args) {
    for (size_t p; (p = a.find("{dir}")) != std::string::npos;) a.replace(p, 5, dir.string());
    args.push_back(a);
  }
  auto r = run_strata(args, 90);
  SCOPED_TRACE("strata " + ::testing::PrintToString(args) + "\nstderr:\n" + r.err);
  ASSERT_FALSE(r.timed_out) << "no answer within 90 s";
  ASSERT_FALSE(r.signaled) << "killed by signal " << r.signal;
  EXPECT_NE(std::find(c.exit_codes.begin(), c.exit_codes.end(), r.exit_code), c.exit_codes.end())
      << "exit code " << r.exit_code;
  int errors = 0;
  for (const auto& l : r.err_lines()) errors += l.rfind("error:", 0) == 0;
  EXPECT_EQ(errors, r.exit_code == 0 ? 0 : 1);
  for (const char* bad : {"terminate", "Aborted", "AddressSanitizer", "runtime error:", "internal:"})
    EXPECT_EQ(r.err.find(bad), std::string::npos) << "stderr contains " << bad;
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Cli, AbsurdSizeTest,
    ::testing::ValuesIn(std::vector<AbsurdSize>{
        {"plan_1e6_layers", {"plan", "--model", "{dir}/layers.yaml", "--gpus", "8"}, {2, 3}},
        {"simulate_1e6_layers", {"simulate", "--model", "{dir}/layers.yaml"}, {0, 2}},
        {"plan_1e9_gpus", {"plan", "--cluster", "{dir}/huge.yaml", "--gpus", "1000000000"}, {0, 2, 3}},
        {"simulate_1e9_gpus",
         {"simulate", "--cluster", "{dir}/huge.yaml", "--model", "gpt2-124m", "--gpus",
          "1000000000", "--global-batch", "1000000000"},
         {0, 2}},
    }),
    [](const auto& info) { return info.param.name; });

}  // namespace
