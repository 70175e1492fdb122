// libFuzzer target: the cluster spec parser (costmodel::parse_cluster_spec).
#include "costmodel/cluster_spec.h"
#include "fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return strata::fuzz::check_parser(
      data, size,
      [](const std::string& t, const std::string& s) {
        return strata::costmodel::parse_cluster_spec(t, s);
      },
      [](const strata::costmodel::ClusterSpec& c) { return strata::costmodel::to_yaml(c); });
}
