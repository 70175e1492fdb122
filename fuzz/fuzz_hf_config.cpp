// libFuzzer target: the HuggingFace config.json reader (models::parse_hf_config).
// What it accepts must write as strata YAML that loads back identically.
#include "fuzz/fuzz_target.h"
#include "models/model_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto spec = strata::fuzz::accepted(data, size, "fuzz-input", strata::models::parse_hf_config);
  if (!spec) return 0;
  const std::string yaml = strata::models::to_yaml(*spec);
  if (strata::models::to_yaml(strata::models::parse_model_yaml(yaml, "fuzz-roundtrip")) != yaml)
    __builtin_trap();
  return 0;
}
