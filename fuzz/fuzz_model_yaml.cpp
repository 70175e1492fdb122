// libFuzzer target: the strata model YAML parser (models::parse_model_yaml).
#include "fuzz/fuzz_target.h"
#include "models/model_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return strata::fuzz::check_parser(
      data, size,
      [](const std::string& t, const std::string& s) {
        return strata::models::parse_model_yaml(t, s);
      },
      [](const strata::models::ModelSpec& m) { return strata::models::to_yaml(m); });
}
