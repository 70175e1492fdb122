// libFuzzer target: the device profile parser (costmodel::parse_device_profile).
#include "costmodel/device_profile.h"
#include "fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return strata::fuzz::check_parser(
      data, size,
      [](const std::string& t, const std::string& s) {
        return strata::costmodel::parse_device_profile(t, s);
      },
      [](const strata::costmodel::DeviceProfile& p) { return strata::costmodel::to_yaml(p); });
}
