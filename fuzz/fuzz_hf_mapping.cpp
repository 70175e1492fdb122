// libFuzzer target: the HuggingFace config.json mapping (models::parse_hf_config) against
// its own rules. Whatever it accepts must be a valid model spec, have a model_type from
// the allow-list (when it names one), and carry none of the architecture keys the spec
// cannot express: those must have been refused by name.
#include <string>

#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "fuzz/fuzz_target.h"
#include "models/model_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto spec = strata::fuzz::accepted(data, size, "fuzz/config.json", strata::models::parse_hf_config);
  if (!spec) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  // Accepted: a spec the rest of strata can use.
  try {
    strata::models::validate(*spec, "fuzz");
  } catch (const strata::InputError&) {
    __builtin_trap();
  }
  const nlohmann::json j = strata::parse_json(text);  // it parsed once, it parses again
  const auto on = [&](const char* key) {
    if (!j.contains(key) || j[key].is_null()) return false;
    const auto& v = j[key];
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_number()) return v.get<double>() != 0;
    return !v.empty();
  };
  for (const char* key : {"is_encoder_decoder", "parallel_attn", "use_parallel_residual", "parallel_residual",
                          "multi_query", "new_decoder_architecture"})
    if (on(key)) __builtin_trap();
  for (const char* key : {"vision_config", "text_config", "hidden_activation", "feed_forward_proj",
                          "encoder_layers", "num_encoder_layers", "decoder_layers", "num_local_experts",
                          "num_experts"})
    if (j.contains(key) && !j[key].is_null()) __builtin_trap();
  if (j.contains("model_type") && !j["model_type"].is_null()) {  // null: read by its keys
    const std::string t = j["model_type"].get<std::string>();
    if (t != "llama" && t != "mistral" && t != "qwen2" && t != "gpt2") __builtin_trap();
  }
  return 0;
}
