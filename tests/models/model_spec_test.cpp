#include "models/model_spec.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/errors.h"
#include "tests/models/model_test_util.h"
#include "models/catalog.h"

using namespace strata::models;
using strata::InputError;

namespace {

using strata::models::testing::message_of;

const char* kGood =
    "name: small\n"
    "layers: 2\n"
    "hidden: 64\n"
    "heads: 4\n"
    "vocab: 100\n"
    "seq_len: 16\n";

// A YAML model with `key: value` replacing or adding one line of kGood.
std::string with(const std::string& key, const std::string& value) {
  std::string out;
  bool replaced = false;
  std::string text = kGood;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl - pos);
    if (line.rfind(key + ":", 0) == 0) {
      out += key + ": " + value + "\n";
      replaced = true;
    } else {
      out += line + "\n";
    }
    pos = nl + 1;
  }
  if (!replaced) out += key + ": " + value + "\n";
  return out;
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("strata_models_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    auto p = path / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
};

}  // namespace

TEST(ModelSpec, ParsesYamlWithDefaults) {
  ModelSpec m = parse_model_yaml(kGood, "small.yaml");
  EXPECT_EQ(m.name, "small");
  EXPECT_EQ(m.layers, 2);
  EXPECT_EQ(m.hidden, 64);
  EXPECT_EQ(m.heads, 4);
  EXPECT_EQ(m.kv_heads, 4);    // default = heads
  EXPECT_EQ(m.ffn, 256);       // default = 4*hidden
  EXPECT_EQ(m.head_dim(), 16);
  EXPECT_EQ(m.activation, Activation::Gelu);
  EXPECT_EQ(m.norm, Norm::LayerNorm);
  EXPECT_EQ(m.positions, Positions::Learned);
  EXPECT_TRUE(m.tied_embeddings);
}

TEST(ModelSpec, SwigluDefaultsToRope) {
  ModelSpec m = parse_model_yaml(with("activation", "swiglu") + "ffn: 172\n", "x.yaml");
  EXPECT_EQ(m.activation, Activation::SwiGlu);
  EXPECT_EQ(m.positions, Positions::Rope);
  EXPECT_EQ(m.ffn, 172);
}

TEST(ModelSpec, NameDefaultsToFileStem) {
  std::string text = kGood;
  text = text.substr(text.find('\n') + 1);  // drop the name line
  EXPECT_EQ(parse_model_yaml(text, "/some/dir/my-model.yaml").name, "my-model");
}

TEST(ModelSpec, SourceKeyIsAcceptedAndIgnored) {
  ModelSpec m = parse_model_yaml(with("source", "\"a paper, Table 1\""), "x.yaml");
  EXPECT_EQ(m, parse_model_yaml(kGood, "x.yaml"));
}

TEST(ModelSpec, EachNonPositiveSizeIsNamed) {
  for (const char* field : {"layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq_len"}) {
    for (const char* bad : {"0", "-3"}) {
      std::string m = message_of([&] { parse_model_yaml(with(field, bad), "bad.yaml"); });
      EXPECT_CONTAINS(m, std::string("model.") + field + " (" + bad + ") must be > 0");
      EXPECT_CONTAINS(m, "bad.yaml:");
    }
  }
}

TEST(ModelSpec, AbsurdSizesAreRejected) {
  const std::pair<const char*, const char*> cases[] = {
      {"layers", "1000001"},     {"hidden", "2000000"}, {"heads", "100001"},
      {"vocab", "100000001"},    {"seq_len", "1e9"},    {"ffn", "99999999999"},
  };
  for (const auto& [field, value] : cases) {
    std::string m = message_of([&, f = field, v = value] { parse_model_yaml(with(f, v), "big.yaml"); });
    EXPECT_CONTAINS(m, std::string("model.") + field);
    EXPECT_CONTAINS(m, "too large");
  }
  // Beyond int64: the reader says so instead of wrapping.
  std::string m = message_of([] { parse_model_yaml(with("layers", "99999999999999999999999"), "x.yaml"); });
  EXPECT_CONTAINS(m, "layers");
  EXPECT_CONTAINS(m, "out of range");
}

TEST(ModelSpec, DivisibilityRulesAreNamed) {
  std::string m = message_of([] { parse_model_yaml(with("heads", "3"), "x.yaml"); });
  EXPECT_CONTAINS(m, "model.hidden (64) must be divisible by model.heads (3)");
  m = message_of([] { parse_model_yaml(with("kv_heads", "3"), "x.yaml"); });
  EXPECT_CONTAINS(m, "model.kv_heads (3) must divide model.heads (4)");
  m = message_of([] { parse_model_yaml(with("kv_heads", "8"), "x.yaml"); });
  EXPECT_CONTAINS(m, "model.kv_heads (8) must divide model.heads (4)");
}

TEST(ModelSpec, UnknownKeysAndBadValuesAreRejected) {
  std::string m = message_of([] { parse_model_yaml(with("hiden", "64"), "x.yaml"); });
  EXPECT_CONTAINS(m, "hiden");
  EXPECT_CONTAINS(m, "unknown key");
  m = message_of([] { parse_model_yaml(with("activation", "relu"), "x.yaml"); });
  EXPECT_CONTAINS(m, "model.activation");
  EXPECT_CONTAINS(m, "gelu, swiglu");
  m = message_of([] { parse_model_yaml(with("norm", "batchnorm"), "x.yaml"); });
  EXPECT_CONTAINS(m, "model.norm");
  m = message_of([] { parse_model_yaml(with("positions", "alibi"), "x.yaml"); });
  EXPECT_CONTAINS(m, "model.positions");
  m = message_of([] { parse_model_yaml(with("tied_embeddings", "maybe"), "x.yaml"); });
  EXPECT_CONTAINS(m, "model.tied_embeddings");
  m = message_of([] { parse_model_yaml(with("layers", "two"), "x.yaml"); });
  EXPECT_CONTAINS(m, "model.layers");
  EXPECT_CONTAINS(m, "expected an integer");
  m = message_of([] { parse_model_yaml(with("layers", "[1, 2]"), "x.yaml"); });
  EXPECT_CONTAINS(m, "model.layers");
  m = message_of([] { parse_model_yaml(with("name", "\"\""), "x.yaml"); });
  EXPECT_CONTAINS(m, "model.name");
}

TEST(ModelSpec, MissingRequiredKeyIsNamed) {
  std::string text = kGood;
  auto p = text.find("vocab");
  text.erase(p, text.find('\n', p) - p + 1);
  std::string m = message_of([&] { parse_model_yaml(text, "x.yaml"); });
  EXPECT_CONTAINS(m, "model.vocab");
  EXPECT_CONTAINS(m, "missing");
}

TEST(ModelSpec, MalformedAndEmptyYaml) {
  EXPECT_CONTAINS(message_of([] { parse_model_yaml("layers: [1,\n", "m.yaml"); }), "m.yaml:");
  EXPECT_CONTAINS(message_of([] { parse_model_yaml("", "m.yaml"); }), "empty");
  EXPECT_CONTAINS(message_of([] { parse_model_yaml("- 1\n- 2\n", "m.yaml"); }), "mapping");
  EXPECT_CONTAINS(message_of([] { parse_model_yaml("just text", "m.yaml"); }), "mapping");
}

TEST(ModelSpec, ValidateNamesSourceAndField) {
  ModelSpec m = parse_model_yaml(kGood, "x.yaml");
  m.heads = 0;
  EXPECT_CONTAINS(message_of([&] { validate(m, "src.yaml"); }), "src.yaml: model.heads (0) must be > 0");
}

TEST(ModelSpec, ToYamlRoundTrips) {
  for (const auto& e : model_catalog()) {
    ModelSpec m = load_model(e.name);
    EXPECT_EQ(parse_model_yaml(to_yaml(m), "round.yaml"), m) << e.name << "\n" << to_yaml(m);
  }
  ModelSpec odd = parse_model_yaml(kGood, "x.yaml");
  odd.name = "weird: name #1";
  odd.tied_embeddings = false;
  odd.positions = Positions::Rope;
  EXPECT_EQ(parse_model_yaml(to_yaml(odd), "round.yaml"), odd);
}

TEST(ModelSpec, WithSeqLenOverridesAndValidates) {
  ModelSpec m = load_model("gpt3-175b");
  EXPECT_EQ(with_seq_len(m, 4096).seq_len, 4096);
  EXPECT_CONTAINS(message_of([&] { with_seq_len(m, 0); }), "--seq (0)");
  EXPECT_CONTAINS(message_of([&] { with_seq_len(m, -1); }), "--seq (-1)");
}

// ---- HuggingFace config.json ------------------------------------------------------

TEST(HfConfig, ParsesLlamaConfig) {
  const char* json = R"({
    "_name_or_path": "meta-llama/Llama-2-7b-hf", "architectures": ["LlamaForCausalLM"],
    "model_type": "llama", "hidden_act": "silu", "hidden_size": 4096,
    "intermediate_size": 11008, "max_position_embeddings": 4096,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "tie_word_embeddings": false,
    "torch_dtype": "float16", "vocab_size": 32000 })";
  ModelSpec m = parse_hf_config(json, "config.json");
  EXPECT_EQ(m.name, "meta-llama/Llama-2-7b-hf");
  ModelSpec cat = load_model("llama2-7b");
  cat.name = m.name;
  EXPECT_EQ(m, cat);
}

TEST(HfConfig, ParsesMistralConfigWithGqaAndDefaults) {
  const char* json = R"({"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
    "max_position_embeddings": 32768, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "sliding_window": null,
    "vocab_size": 32000})";
  ModelSpec m = parse_hf_config(json, "/models/Mistral-7B/config.json");
  EXPECT_EQ(m.name, "Mistral-7B");  // folder name when there is no _name_or_path
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.activation, Activation::SwiGlu);  // hidden_act defaults to silu
  EXPECT_EQ(m.norm, Norm::RmsNorm);
  EXPECT_EQ(m.positions, Positions::Rope);
  EXPECT_FALSE(m.tied_embeddings);
  EXPECT_EQ(m.seq_len, 32768);
}

TEST(HfConfig, ParsesGpt2Config) {
  const char* json = R"({"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
    "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_inner": null, "n_layer": 12,
    "n_positions": 1024, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
    "vocab_size": 50257})";
  ModelSpec m = parse_hf_config(json, "gpt2.json");
  EXPECT_EQ(m.name, "gpt2");
  ModelSpec cat = load_model("gpt2-124m");
  cat.name = "gpt2";
  EXPECT_EQ(m, cat);
  // n_inner given explicitly, n_ctx when n_positions is absent.
  m = parse_hf_config(R"({"n_embd": 64, "n_head": 4, "n_layer": 2, "n_inner": 100,
                          "n_ctx": 32, "vocab_size": 10})", "g.json");
  EXPECT_EQ(m.ffn, 100);
  EXPECT_EQ(m.seq_len, 32);
}

// model_type from an allow-list; architectures the spec cannot express refused by name.
struct HfCase {
  const char* name;
  std::string extra;     // keys added to a valid Llama-style config
  const char* mentions;  // "" = accepted
};

void PrintTo(const HfCase& c, std::ostream* os) { *os << c.name; }

class HfArchitectureTest : public ::testing::TestWithParam<HfCase> {};

TEST_P(HfArchitectureTest, AcceptedOrRefusedByName) {
  const HfCase& c = GetParam();
  const std::string base = R"("hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 172, "vocab_size": 100, "max_position_embeddings": 16)";
  const std::string text = "{" + base + (c.extra.empty() ? "" : ", " + c.extra) + "}";
  const std::string m = message_of([&] { parse_hf_config(text, "c.json"); });
  if (std::string(c.mentions).empty()) EXPECT_EQ(m, "<no InputError>") << text;
  else EXPECT_CONTAINS(m, c.mentions);
}

INSTANTIATE_TEST_SUITE_P(
    HfConfig, HfArchitectureTest,
    ::testing::ValuesIn(std::vector<HfCase>{
        {"llama", R"("model_type": "llama")", ""},
        {"mistral", R"("model_type": "mistral", "sliding_window": null)", ""},
        {"qwen2_window_off", R"("model_type": "qwen2", "use_sliding_window": false, "sliding_window": 4)", ""},
        {"window_not_shorter", R"("model_type": "mistral", "sliding_window": 16)", ""},
        {"no_model_type_by_keys", "", ""},
        {"untied_and_tied", R"("model_type": "llama", "tie_word_embeddings": true)", ""},
        {"unknown_model_type", R"("model_type": "t5")", "model_type 't5' is not supported (supported: llama"},
        {"model_type_not_string", R"("model_type": 5)", "'model_type' must be a string"},
        {"gpt2_type_with_llama_keys", R"("model_type": "gpt2")", "GPT2Config keys"},
        {"encoder_decoder", R"("model_type": "llama", "is_encoder_decoder": true)", "'is_encoder_decoder'"},
        {"encoder_layers", R"("encoder_layers": 6)", "encoder-decoder"},
        {"parallel_attn", R"("model_type": "llama", "parallel_attn": true)", "'parallel_attn'"},
        {"parallel_residual", R"("use_parallel_residual": true)", "'use_parallel_residual'"},
        {"multi_query", R"("model_type": "llama", "multi_query": true)", "'multi_query'"},
        {"new_decoder_architecture", R"("new_decoder_architecture": true)", "'new_decoder_architecture'"},
        {"gelu_gated_hidden_act", R"("model_type": "llama", "hidden_act": "gelu")", "GeGLU"},
        {"gelu_tanh_gated", R"("hidden_act": "gelu_pytorch_tanh")", "GeGLU"},
        {"hidden_activation_gemma", R"("hidden_activation": "gelu_pytorch_tanh")", "'hidden_activation'"},
        {"sliding_window", R"("model_type": "mistral", "sliding_window": 8)", "sliding_window (8)"},
        {"vision_config", R"("model_type": "llama", "vision_config": {"hidden_size": 1024})", "'vision_config'"},
        {"text_config", R"("text_config": {"hidden_size": 64})", "'text_config'"},
        {"feed_forward_proj", R"("feed_forward_proj": "gated-gelu")", "'feed_forward_proj'"},
        {"tie_word_embeddings_not_bool", R"("tie_word_embeddings": "yes")", "'tie_word_embeddings' must be true or false"},
        {"duplicate_key", R"("vocab_size": 200)", "duplicate key \"vocab_size\""},
        {"moe", R"("num_local_experts": 8)", "mixture-of-experts"},
    }),
    [](const auto& info) { return std::string(info.param.name); });

TEST(HfConfig, MalformedJsonGivesPathAndByteOffset) {
  std::string m = message_of([] { parse_hf_config("{\"hidden_size\": 4096,, }", "cfg/config.json"); });
  EXPECT_CONTAINS(m, "cfg/config.json");
  EXPECT_CONTAINS(m, "malformed JSON at byte 22");
  EXPECT_CONTAINS(message_of([] { parse_hf_config("", "c.json"); }), "malformed JSON");
  EXPECT_CONTAINS(message_of([] { parse_hf_config("[1, 2]", "c.json"); }), "JSON object");
  // A number too large for a double is malformed JSON too, not a crash.
  std::string big = message_of([] { parse_hf_config(R"({"hidden_size": 1e605})", "c.json"); });
  EXPECT_CONTAINS(big, "c.json: malformed JSON");
  big = message_of([] { parse_hf_config(R"({"n_embd": 1e300, "n_head": 4, "n_layer": 2, "vocab_size": 10, "n_positions": 8})", "c.json"); });
  EXPECT_CONTAINS(big, "'n_embd' must be an integer");
  big = message_of([] { parse_hf_config(R"({"n_embd": 18446744073709551615, "n_head": 4, "n_layer": 2, "vocab_size": 10, "n_positions": 8})", "c.json"); });
  EXPECT_CONTAINS(big, "'n_embd' (18446744073709551615) is out of range");
}

TEST(HfConfig, MissingAndMistypedKeysAreNamed) {
  const std::string base = R"("hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 172, "vocab_size": 100, "max_position_embeddings": 16)";
  EXPECT_NO_THROW(parse_hf_config("{" + base + "}", "c.json"));
  for (const char* key : {"num_hidden_layers", "num_attention_heads", "intermediate_size",
                          "vocab_size", "max_position_embeddings"}) {
    std::string text = "{" + base + "}";
    auto p = text.find(std::string("\"") + key + "\"");
    auto e = text.find_first_of(",}", p);
    text.erase(p, e - p + (text[e] == ',' ? 1 : 0));
    if (text[text.find_last_not_of(" \n}") ] == ',') text.erase(text.find_last_not_of(" \n}"), 1);
    std::string m = message_of([&] { parse_hf_config(text, "c.json"); });
    EXPECT_CONTAINS(m, std::string("'") + key + "' is missing");
  }
  std::string m = message_of([&] { parse_hf_config("{" + base + R"(, "num_key_value_heads": "8"})", "c.json"); });
  EXPECT_CONTAINS(m, "'num_key_value_heads' must be an integer");
  m = message_of([&] { parse_hf_config("{" + base + R"(, "hidden_act": "relu"})", "c.json"); });
  EXPECT_CONTAINS(m, "hidden_act");
  m = message_of([&] { parse_hf_config("{" + base + R"(, "num_key_value_heads": 3})", "c.json"); });
  EXPECT_CONTAINS(m, "model.kv_heads (3) must divide model.heads (4)");
  EXPECT_CONTAINS(m, "num_key_value_heads");
  m = message_of([&] { parse_hf_config("{" + base + R"(, "num_local_experts": 8})", "c.json"); });
  EXPECT_CONTAINS(m, "mixture-of-experts");
  m = message_of([] { parse_hf_config(R"({"foo": 1})", "c.json"); });
  EXPECT_CONTAINS(m, "not a recognised HuggingFace config.json");
  m = message_of([] { parse_hf_config(R"({"n_embd": 0, "n_head": 4, "n_layer": 2, "vocab_size": 10, "n_positions": 8})", "c.json"); });
  EXPECT_CONTAINS(m, "model.hidden (0) must be > 0");
  EXPECT_CONTAINS(m, "n_embd");
}

// ---- load_model --------------------------------------------------------------------

TEST(LoadModel, LoadsCatalogNamesCaseInsensitively) {
  EXPECT_EQ(load_model("GPT3-175B").layers, 96);
  EXPECT_EQ(load_model("gpt3-175b").hidden, 12288);
}

TEST(LoadModel, UnknownNameSuggestsCloseOnes) {
  std::string m = message_of([] { load_model("gpt3-17b"); });
  EXPECT_CONTAINS(m, "unknown model 'gpt3-17b' (did you mean: gpt3-175b");
  EXPECT_CONTAINS(m, "`strata models` lists them");
  m = message_of([] { load_model("lama2-7b"); });
  EXPECT_CONTAINS(m, "did you mean: llama2-7b");
  m = message_of([] { load_model("zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"); });
  EXPECT_CONTAINS(m, "unknown model");
  EXPECT_EQ(m.find("did you mean"), std::string::npos) << m;
  EXPECT_CONTAINS(message_of([] { load_model(""); }), "empty model name");
}

TEST(LoadModel, ReadsFilesByExtensionAndFolder) {
  TempDir dir;
  std::string yaml = dir.write("mine.yaml", kGood);
  EXPECT_EQ(load_model(yaml).name, "small");
  std::string json = dir.write("hf/config.json",
                               R"({"n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 10, "n_positions": 8})");
  EXPECT_EQ(load_model(json).hidden, 64);
  EXPECT_EQ(load_model(json).name, "hf");
  EXPECT_EQ(load_model((dir.path / "hf").string()).hidden, 64);  // a HF model folder
  std::string m = message_of([&] { load_model((dir.path / "nope.yaml").string()); });
  EXPECT_CONTAINS(m, "nope.yaml");
  EXPECT_CONTAINS(m, "does not exist");
  std::string bad = dir.write("bad.yml", with("heads", "0"));
  EXPECT_CONTAINS(message_of([&] { load_model(bad); }), "bad.yml:");
  std::string empty_dir = (dir.path / "emptydir").string();
  std::filesystem::create_directories(empty_dir);
  EXPECT_CONTAINS(message_of([&] { load_model(empty_dir); }), "without a config.json");
}
